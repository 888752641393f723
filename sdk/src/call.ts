// What every call of the client shares: its options, and the one request path (retries, errors)
// that the client hands to the wings built on it (reconcile.ts). A leaf: it imports nothing.

export interface CallOptions {
  signal?: AbortSignal;
}

/** The client's request path: method, path, body, options, extra headers; resolves with the body. */
export type Call = <T>(
  method: string,
  path: string,
  body: unknown,
  options: CallOptions,
  headers?: Record<string, string>,
) => Promise<T>;
