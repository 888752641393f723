// Key rotation in the metrics (docs/reference/operators-and-audit.md#encryption-key-rotation): whether a rotation runs, toward which key id, and
// how many rows it has rewritten, read from the one row of encryption_rotation at scrape time
// (cheap: the per-key row counts, a scan of every ciphertext, are GET /admin/v1/encryption's).
import { Gauge, type Registry } from 'prom-client';
import { rotationProgress } from '../core/sweeper/rotation.ts';
import type { Queryable } from '../db/database.ts';

export function registerEncryptionMetrics(registers: Registry[], db: Queryable, prefix: string): void {
  let last: Promise<{ state: string; target: string; rewritten: number } | null> | null = null;
  // Both gauges read the same row once per scrape.
  const read = () => {
    last ??= rotationProgress(db).finally(() => setTimeout(() => (last = null), 0));
    return last;
  };
  new Gauge({
    name: `${prefix}encryption_rotation_running`,
    help: 'Whether a key rotation is running (1) or not (0), by the key id it rewrites rows under',
    labelNames: ['key_id'] as const,
    registers,
    async collect() {
      this.reset();
      try {
        const row = await read();
        if (row) this.set({ key_id: row.target }, row.state === 'running' ? 1 : 0);
      } catch {
        // The database is away: no series rather than a stale one.
      }
    },
  });
  new Gauge({
    name: `${prefix}encryption_rows_rewritten`,
    help: 'Rows (stock codes, job codes, webhook secrets) the latest key rotation has rewritten',
    registers,
    async collect() {
      this.reset();
      try {
        const row = await read();
        this.set(Number(row?.rewritten ?? 0));
      } catch {
        // as above
      }
    },
  });
}
