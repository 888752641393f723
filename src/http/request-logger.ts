// A request's logger, made when the request first logs. Fastify gives every request a
// child of the listener's logger bound to its request id; a pino child of a logger with redaction
// paths (src/logger.ts) runs the redaction over those bindings and allocates about 1 KB, for each
// request, although a request answered at the default level (warn) logs nothing. This one stands
// in for the child until a call that would write, then makes the real child and hands every call
// to it: the lines written are the child's own, with the request id.
import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, Level, Logger } from 'pino';

type Write = (...args: unknown[]) => void;

class LazyRequestLogger {
  #real: Logger | undefined;
  readonly #parent: Logger;
  readonly #bindings: Bindings;

  constructor(parent: Logger, bindings: Bindings) {
    this.#parent = parent;
    this.#bindings = bindings;
  }

  /** The child logger itself, made on first use. */
  get #child(): Logger {
    this.#real ??= this.#parent.child(this.#bindings);
    return this.#real;
  }

  #write(level: Level, args: unknown[]): void {
    if (!(this.#real ?? this.#parent).isLevelEnabled(level)) return;
    (this.#child[level] as Write).apply(this.#child, args);
  }

  get level(): string {
    return (this.#real ?? this.#parent).level;
  }
  set level(level: string) {
    this.#child.level = level;
  }
  fatal(...args: unknown[]) {
    this.#write('fatal', args);
  }
  error(...args: unknown[]) {
    this.#write('error', args);
  }
  warn(...args: unknown[]) {
    this.#write('warn', args);
  }
  info(...args: unknown[]) {
    this.#write('info', args);
  }
  debug(...args: unknown[]) {
    this.#write('debug', args);
  }
  trace(...args: unknown[]) {
    this.#write('trace', args);
  }
  silent() {}
  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.#child.child(bindings, options);
  }
}

/**
 * Fastify's `childLoggerFactory`: the lazy child above, or a real child at once when the route
 * asks for options of its own (a route's `logLevel`).
 */
export function requestLogger(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  if (Object.keys(options).length > 0) return logger.child(bindings, options);
  return new LazyRequestLogger(logger as unknown as Logger, bindings) as unknown as FastifyBaseLogger;
}
