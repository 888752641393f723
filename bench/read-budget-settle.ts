// The read budget's settle on PostgreSQL (core/limits/read-budget.ts, several processes): what one
// settle costs this process, in CPU, with the keys and reads of a busy gateway (the bench's 1,000
// keys, read 7 times a second each: 70 reads a key in the window, 7,000 new ones a second).
// Usage: npm run bench:read-budget -- --postgres=URL (a database without the gateway; the run makes the
// one table it needs and drops it)
import { createReadBudget } from '../src/core/limits/read-budget.ts';
import { openPostgres } from '../src/db/database.ts';

const url = /^--postgres=(.+)$/.exec(process.argv[2] ?? '')?.[1];
if (!url) throw new Error('usage: npm run bench:read-budget -- --postgres=URL');
const KEYS = 1000;
const READS_PER_KEY_PER_SECOND = 7;
const SECONDS = 20;
const db = await openPostgres(url);
// Never a gateway's database: the run drops its burst_windows at the end.
const gateway = await db.query(
  "select 1 from information_schema.tables where table_name = 'schema_migrations'",
);
if (gateway.rows.length > 0) throw new Error('this database holds a gateway: use a new, empty one');
await db.query(
  'create unlogged table if not exists burst_windows (key_id text primary key, hits_ms bigint[] not null, accepted boolean not null default true)',
);
await db.query('truncate burst_windows');
const rule = { bucket: 'read', what: 'reads for this key', limit: 300, windowMs: 10_000 };
// Settles every 100 ms; each simulated second's reads are taken at once, then the run waits 250 ms
// while nothing else happens here: the CPU of that wait is the settle's (two timer passes, one
// with the reads to send; the other finds nothing and sends no statement).
const budget = createReadBudget(db, rule, { shared: true, settleEveryMs: 100, maxUnsettled: 1_000 });
const t0 = Date.now();
const cpu: number[] = [];
for (let s = 0; s < SECONDS; s++) {
  for (let r = 0; r < READS_PER_KEY_PER_SECOND; r++)
    for (let k = 0; k < KEYS; k++) budget.take(`key_${k}`, t0 + s * 1000 + r * 100 + (k % 100));
  const before = process.cpuUsage();
  await new Promise((r) => setTimeout(r, 250));
  const used = process.cpuUsage(before);
  if (s >= 10) cpu.push((used.user + used.system) / 1000);
}
cpu.sort((a, b) => a - b);
console.log(
  `settle of ${KEYS} keys, ${KEYS * READS_PER_KEY_PER_SECOND} new reads, ${KEYS * 70} in the window: CPU ms median ${cpu[cpu.length >> 1]!.toFixed(1)} (min ${cpu[0]!.toFixed(1)}, max ${cpu.at(-1)!.toFixed(1)})`,
);
await budget.stop();
await db.query('drop table burst_windows');
await db.close();
