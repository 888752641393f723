// The request log's series: rows written, and rows not kept by reason (the buffer was
// full, the daily cap, a failed write). Closed label sets; never a customer or a path.
import { Counter, type Registry } from 'prom-client';
import type { RequestLogCounters } from '../core/requests/log-writer.ts';

export function registerRequestLogMetrics(registers: Registry[], prefix: string): RequestLogCounters {
  const written = new Counter({
    name: `${prefix}request_log_rows_written_total`,
    help: 'Refused or failed public API answers written to the request log',
    registers,
  });
  const dropped = new Counter({
    name: `${prefix}request_log_rows_dropped_total`,
    help: 'Refused or failed answers not written to the request log, by reason (sampled: a subject past its share of the buffer; buffer_full; cap; write_failed)',
    labelNames: ['reason'] as const,
    registers,
  });
  return {
    written: (n) => written.inc(n),
    dropped: (reason, n) => dropped.inc({ reason }, n),
  };
}
