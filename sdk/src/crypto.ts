// Web Crypto on every runtime: globalThis.crypto (Node 19+, Deno, Bun, edge runtimes), or Node
// 18's node:crypto webcrypto, loaded only when the global is missing.
let cached: Promise<Crypto> | undefined;

export function webCrypto(): Promise<Crypto> {
  const global = (globalThis as { crypto?: Crypto }).crypto;
  if (global?.subtle) return Promise.resolve(global);
  // A variable, not a literal: bundlers for browsers and edge runtimes leave it alone.
  const nodeCrypto = 'node:crypto';
  cached ??= import(/* webpackIgnore: true */ nodeCrypto).then((m: { webcrypto: Crypto }) => m.webcrypto);
  return cached;
}

/** A random Idempotency-Key: a UUID v4 from the runtime's CSPRNG. */
export async function randomKey(): Promise<string> {
  const c = await webCrypto();
  if (typeof c.randomUUID === 'function') return c.randomUUID();
  const b = c.getRandomValues(new Uint8Array(16));
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const hex = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
