// A Bot API call's parameters off the wire: the query string plus a JSON, urlencoded or
// multipart/form-data body (grammY sends JSON, and multipart when it uploads a file), read the way
// Telegram reads them: form fields are strings that may hold numbers, booleans or JSON.
import type { IncomingMessage } from 'node:http';
import { ApiError } from './api-error.ts';

/** A file part of a multipart body. */
export interface UploadedFile {
  filename: string;
  contentType: string;
  data: Buffer;
}

/** Largest request body accepted: Telegram takes uploads up to 50 MB. */
const MAX_BODY_BYTES = 50 * 1024 * 1024;

export class Params {
  constructor(
    readonly raw: Record<string, unknown>,
    readonly files: Map<string, UploadedFile> = new Map(),
  ) {}

  has(name: string): boolean {
    const v = this.raw[name];
    return v !== undefined && v !== null && v !== '';
  }

  str(name: string, required?: 'required'): string | undefined {
    const v = this.raw[name];
    if (v === undefined || v === null || v === '') {
      if (required) throw new ApiError(400, `Bad Request: ${name} is empty`);
      return undefined;
    }
    return typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);
  }

  int(name: string, required?: 'required'): number | undefined {
    const s = this.str(name, required);
    if (s === undefined) return undefined;
    if (!/^-?\d+$/.test(s)) throw new ApiError(400, `Bad Request: invalid ${name} specified`);
    return Number(s);
  }

  bool(name: string): boolean {
    const v = this.raw[name];
    return v === true || v === 'true' || v === 1 || v === '1';
  }

  /** An object or array, sent as JSON or (in a form) as a JSON string. */
  json(name: string): unknown {
    const v = this.raw[name];
    if (v === undefined || v === null || v === '') return undefined;
    if (typeof v !== 'string') return v;
    try {
      return JSON.parse(v);
    } catch {
      throw new ApiError(400, `Bad Request: can't parse ${name} JSON object`);
    }
  }

  /** The file a parameter names with `attach://<part>` (grammY's way), or sent as the part itself. */
  file(name: string): UploadedFile | undefined {
    const v = this.raw[name];
    if (typeof v === 'string' && v.startsWith('attach://')) {
      const file = this.files.get(v.slice('attach://'.length));
      if (!file) throw new ApiError(400, `Bad Request: file attach://${v.slice(9)} not found in the request`);
      return file;
    }
    return this.files.get(name);
  }

  /** What the call log shows: the parameters, with each uploaded file as its name and size. */
  forLog(): Record<string, unknown> {
    const out: Record<string, unknown> = { ...this.raw };
    for (const [name, f] of this.files) out[name] = { filename: f.filename, size: f.data.length };
    return out;
  }
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new ApiError(413, 'Request Entity Too Large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** The call's parameters: query string first, the body's fields over them. */
export async function readParams(req: IncomingMessage, query: URLSearchParams): Promise<Params> {
  const raw: Record<string, unknown> = Object.fromEntries(query);
  const body = await readBody(req);
  const header = req.headers['content-type'] ?? '';
  const type = header.toLowerCase();
  if (body.length === 0) return new Params(raw);
  if (type.startsWith('application/json')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      throw new ApiError(400, "Bad Request: can't parse JSON");
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw new ApiError(400, 'Bad Request: the JSON body must be an object');
    return new Params({ ...raw, ...(parsed as Record<string, unknown>) });
  }
  if (type.startsWith('application/x-www-form-urlencoded')) {
    return new Params({ ...raw, ...Object.fromEntries(new URLSearchParams(body.toString('utf8'))) });
  }
  if (type.startsWith('multipart/form-data')) {
    // The boundary is case-sensitive: read from the header as sent, not lowercased.
    const m = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(header);
    const boundary = m?.[1] ?? m?.[2];
    if (!boundary) throw new ApiError(400, 'Bad Request: multipart body without a boundary');
    const { fields, files } = parseMultipart(body, boundary);
    return new Params({ ...raw, ...fields }, files);
  }
  throw new ApiError(400, `Bad Request: unsupported content type ${type.split(';')[0]}`);
}

/**
 * A multipart/form-data body split into text fields and files. Lenient about header spelling:
 * grammY writes `content-disposition:form-data;name="x";filename=a.txt` (no spaces, filename
 * unquoted), browsers and curl write it quoted with spaces.
 */
export function parseMultipart(
  body: Buffer,
  boundary: string,
): { fields: Record<string, string>; files: Map<string, UploadedFile> } {
  const fields: Record<string, string> = {};
  const files = new Map<string, UploadedFile>();
  const delimiter = Buffer.from(`--${boundary}`);
  let pos = body.indexOf(delimiter);
  while (pos !== -1) {
    let start = pos + delimiter.length;
    if (body.subarray(start, start + 2).toString() === '--') break; // the closing delimiter
    if (body.subarray(start, start + 2).toString() === '\r\n') start += 2;
    const next = body.indexOf(Buffer.from(`\r\n--${boundary}`), start);
    if (next === -1) throw new ApiError(400, 'Bad Request: unterminated multipart body');
    const part = body.subarray(start, next);
    const headerEnd = part.indexOf('\r\n\r\n');
    if (headerEnd === -1) throw new ApiError(400, 'Bad Request: multipart part without headers');
    const headers = part.subarray(0, headerEnd).toString('utf8');
    const data = part.subarray(headerEnd + 4);
    const disposition = /content-disposition\s*:([^\r\n]*)/i.exec(headers)?.[1] ?? '';
    const name = attribute(disposition, 'name');
    if (name !== undefined) {
      const filename = attribute(disposition, 'filename');
      if (filename === undefined) fields[name] = data.toString('utf8');
      else {
        const contentType = /content-type\s*:\s*([^\r\n;]+)/i.exec(headers)?.[1]?.trim();
        files.set(name, {
          filename,
          contentType: contentType ?? 'application/octet-stream',
          data: Buffer.from(data),
        });
      }
    }
    pos = next + 2;
  }
  return { fields, files };
}

function attribute(disposition: string, key: string): string | undefined {
  const m = new RegExp(`(?:^|;)\\s*${key}=(?:"([^"]*)"|([^;]*))`, 'i').exec(disposition);
  return m ? (m[1] ?? m[2]?.trim()) : undefined;
}
