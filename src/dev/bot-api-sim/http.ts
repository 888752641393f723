// The stand-in's HTTP face, in Telegram's layout: `{root}/bot<token>/<method>` (GET or POST)
// answers `{ok: true, result}` or `{ok: false, error_code, description[, parameters]}`, and
// `{root}/file/bot<token>/<file_path>` serves a file's bytes.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { ApiError } from './api-error.ts';
import { METHODS } from './methods.ts';
import { readParams } from './params.ts';
import type { World } from './world.ts';

export interface CallRecord {
  method: string;
  params: Record<string, unknown>;
  /** Date.now() when the call arrived. */
  at: number;
  /** The error_code answered, when the call failed (an injected failure or a refusal). */
  error_code?: number;
}

export interface Failure {
  error_code: number;
  description?: string;
  retry_after?: number;
}

export interface HttpDeps {
  world: World;
  token: string;
  calls: CallRecord[];
  /** The injected failure the next call of this method answers, if any (and spends it). */
  takeFailure(method: string): Failure | undefined;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  if (res.writableEnded || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: ServerResponse, err: ApiError): void {
  send(res, err.code, {
    ok: false,
    error_code: err.code,
    description: err.message,
    ...(err.retryAfter !== undefined ? { parameters: { retry_after: err.retryAfter } } : {}),
  });
}

/** What a failure injected with failNext looks like on the wire, with Telegram's usual texts. */
export function failureError(f: Failure): ApiError {
  const description =
    f.description ??
    (f.error_code === 429
      ? `Too Many Requests: retry after ${f.retry_after ?? 1}`
      : f.error_code === 403
        ? 'Forbidden: bot was blocked by the user'
        : f.error_code === 400
          ? 'Bad Request'
          : f.error_code === 502
            ? 'Bad Gateway'
            : 'Internal Server Error');
  const retryAfter = f.retry_after ?? (f.error_code === 429 ? 1 : undefined);
  return new ApiError(f.error_code, description, retryAfter);
}

function serveFile(deps: HttpDeps, res: ServerResponse, token: string, path: string): void {
  const file = token === deps.token ? deps.world.fileByPath(decodeURIComponent(path)) : undefined;
  if (!file) {
    sendError(
      res,
      token === deps.token
        ? new ApiError(404, 'Not Found: file not found')
        : new ApiError(401, 'Unauthorized'),
    );
    return;
  }
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': file.content.length });
  res.end(file.content);
}

async function callMethod(
  deps: HttpDeps,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  name: string,
): Promise<void> {
  // Ends a long poll whose client went away, so a later poll is not answered 409 for it.
  const gone = new AbortController();
  res.on('close', () => {
    if (!res.writableEnded) gone.abort();
  });
  const call: CallRecord = { method: name, params: {}, at: Date.now() };
  try {
    const params = await readParams(req, url.searchParams);
    call.params = params.forLog();
    deps.calls.push(call);
    const method = METHODS[name.toLowerCase()];
    if (!method) throw new ApiError(404, 'Not Found: method not found');
    const failure = deps.takeFailure(name);
    if (failure) throw failureError(failure);
    const result = await method(deps.world, params, gone.signal);
    send(res, 200, { ok: true, result });
  } catch (err) {
    const apiError =
      err instanceof ApiError ? err : new ApiError(500, `Internal Server Error: ${(err as Error)?.message}`);
    call.error_code = apiError.code;
    sendError(res, apiError);
  }
}

export function createBotApiServer(deps: HttpDeps): Server {
  return createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const file = /^\/file\/bot([^/]*)\/(.+)$/.exec(url.pathname);
    if (file && (req.method === 'GET' || req.method === 'HEAD'))
      return serveFile(deps, res, file[1]!, file[2]!);
    const api = /^\/bot([^/]*)\/([A-Za-z]+)$/.exec(url.pathname);
    if (!api || (req.method !== 'GET' && req.method !== 'POST'))
      return sendError(res, new ApiError(404, 'Not Found'));
    if (api[1] !== deps.token) {
      req.resume();
      return sendError(res, new ApiError(401, 'Unauthorized'));
    }
    void callMethod(deps, req, res, url, api[2]!);
  });
}
