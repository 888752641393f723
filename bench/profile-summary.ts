// Summarises a V8 .cpuprofile (from npm run bench -- --cpu-prof=DIR): self time by function and
// by package, so "where does the time go" has a first answer without opening DevTools.
// Usage: npx tsx bench/profile-summary.ts FILE.cpuprofile [top=25]
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, topArg] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: npx tsx bench/profile-summary.ts FILE.cpuprofile [top]\n');
  process.exit(1);
}
const top = Number(topArg ?? 25);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));

const selfMicros = new Map<number, number>();
profile.samples.forEach((id, i) => {
  selfMicros.set(id, (selfMicros.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});
const total = [...selfMicros.values()].reduce((a, b) => a + b, 0);

/** The package (node_modules/<name>), "project src/…", "node:internal" or the V8 pseudo-frame. */
function area(url: string, name: string): string {
  if (!url) return `(${name || 'native'})`;
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1]!;
  if (url.startsWith('node:')) return 'node internals';
  const src = /\/(src|bench)\/(.*)$/.exec(url);
  return src ? `${src[1]}/${src[2]}` : url;
}

const byFunction = new Map<string, number>();
const byArea = new Map<string, number>();
for (const [id, micros] of selfMicros) {
  const f = byId.get(id)!.callFrame;
  const where = area(f.url, f.functionName);
  const key = `${f.functionName || '(anonymous)'}  ${where}:${f.lineNumber + 1}`;
  byFunction.set(key, (byFunction.get(key) ?? 0) + micros);
  byArea.set(where, (byArea.get(where) ?? 0) + micros);
}

const print = (title: string, m: Map<string, number>) => {
  process.stdout.write(`\n${title} (of ${(total / 1e6).toFixed(1)} s sampled)\n`);
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    process.stdout.write(`${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}\n`);
  }
};
print('self time by area', byArea);
print('self time by function', byFunction);
