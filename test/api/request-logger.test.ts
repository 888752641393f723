// The request's lazy logger (src/http/request-logger.ts) with the service's real pino logger:
// nothing below the level is written (and no child is made for it), what is written carries the
// request's bindings and is redacted like any line, and a route's own log level gets a real child.
import { Writable } from 'node:stream';
import { expect, test, vi } from 'vitest';
import { requestLogger } from '../../src/http/request-logger.ts';
import { createLogger } from '../../src/logger.ts';

function capture(level: string) {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)) as Record<string, unknown>);
      done();
    },
  });
  return { logger: createLogger(level, stream).child({ listener: 'public' }), lines };
}

test('below the level nothing is written and no child is made; at it, a line with the request id', () => {
  const { logger, lines } = capture('warn');
  const child = vi.spyOn(logger, 'child');
  const log = requestLogger(logger, { reqId: 'req_1' }, {});
  log.info({ req: { method: 'GET', url: '/v1/me' } }, 'incoming request');
  log.debug('nothing');
  expect(child).not.toHaveBeenCalled();
  expect(log.level).toBe('warn');
  log.warn({ token: 'rk_test_secret' }, 'could not read account headers');
  log.error(new Error('boom'), 'failed');
  expect(child).toHaveBeenCalledTimes(1);
  expect(lines.map((l) => [l.level, l.reqId, l.listener, l.msg])).toEqual([
    [40, 'req_1', 'public', 'could not read account headers'],
    [50, 'req_1', 'public', 'failed'],
  ]);
  // Redacted as every line is.
  expect(lines[0]!.token).toBe('[redacted]');
  expect((lines[1]!.err as { message: string }).message).toBe('boom');
});

test('its level can be raised for one request, and its children keep its bindings', () => {
  const { logger, lines } = capture('warn');
  const log = requestLogger(logger, { reqId: 'req_2' }, {});
  log.level = 'info';
  log.info('now written');
  log.child({ job: 'job_1' }).warn('from a child');
  // The listener's own logger is not changed by it.
  expect(logger.level).toBe('warn');
  expect(lines.map((l) => [l.reqId, l.job, l.msg])).toEqual([
    ['req_2', undefined, 'now written'],
    ['req_2', 'job_1', 'from a child'],
  ]);
});

test("a route's own options make the real child at once", () => {
  const { logger, lines } = capture('warn');
  const log = requestLogger(logger, { reqId: 'req_3' }, { level: 'debug' });
  expect(log.level).toBe('debug');
  log.debug('debug of that route');
  expect(lines.map((l) => [l.reqId, l.msg])).toEqual([['req_3', 'debug of that route']]);
});
