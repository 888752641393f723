// One logger for the process. Redaction is configured here, once: API keys, tokens, webhook
// secrets and codes never reach the logs (DESIGN house style 13).
import { type DestinationStream, type Logger, pino } from 'pino';

export const REDACT_PATHS = [
  'req.headers.authorization',
  'headers.authorization',
  'authorization',
  '*.authorization',
  'key',
  '*.key',
  'token',
  '*.token',
  'secret',
  '*.secret',
  'code',
  '*.code',
  'codes',
  '*.codes',
  'body',
  '*.body',
];

/** A URL with its query values masked: a client may put a key or token in the query string. */
export const redactQueryValues = (url: string | undefined) =>
  url?.replace(/([?&][^=&#]*)=[^&#]*/g, '$1=[redacted]');

export function createLogger(level: string, stream?: DestinationStream): Logger {
  return pino(
    {
      level,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      serializers: {
        // Only what support needs; never headers (Authorization) or bodies (codes).
        req: (req: { method?: string; url?: string; ip?: string }) => ({
          method: req.method,
          url: redactQueryValues(req.url),
          ip: req.ip,
        }),
      },
    },
    stream,
  );
}

/** A code as it may appear in a log: its last 4 characters at most. */
export const maskCode = (code: string) => `…${code.slice(-4)}`;
