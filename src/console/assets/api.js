// The admin API, as the console calls it: the session cookie authenticates (the browser sends
// it; scripts cannot read it), and X-Console marks requests as coming from these pages (CSRF).

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = body?.error_code ?? 'unknown';
  }
}

/** Called when the API answers 401: the session is gone, show the sign-in form. */
let onSignedOut = () => {};
export const whenSignedOut = (fn) => {
  onSignedOut = fn;
};

export async function api(method, path, body, headers = {}) {
  const res = await fetch(path, {
    method,
    credentials: 'same-origin',
    headers: {
      'X-Console': '1',
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json().catch(() => null);
  if (res.status === 401 && path !== '/console/session') onSignedOut();
  if (!res.ok) throw new ApiError(res.status, json);
  return json;
}

/** A query string from an object, leaving out empty values. */
export function qs(params) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') p.set(k, v);
  const s = p.toString();
  return s ? `?${s}` : '';
}

export const signIn = (token) => api('POST', '/console/session', { token });
export const signOut = () => api('DELETE', '/console/session');
export const session = () => api('GET', '/console/session');

/**
 * Downloads what `path` answers as CSV (the admin lists' exports) as a file named by
 * its Content-Disposition: fetched with the session like every call, saved through a blob link.
 */
export async function downloadCsv(path, fallbackName) {
  const res = await fetch(path, {
    credentials: 'same-origin',
    headers: { 'X-Console': '1', Accept: 'text/csv' },
  });
  if (res.status === 401) onSignedOut();
  if (!res.ok) throw new ApiError(res.status, await res.json().catch(() => null));
  const name = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1] ?? fallbackName;
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.hidden = true;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
