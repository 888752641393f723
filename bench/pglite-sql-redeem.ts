// The redeem's SQL alone on PGlite, against one query by primary key on the same PGlite: the
// ceiling of the PGlite goal (sync redeem through the gateway ÷ this), however fast the
// gateway's Node side gets. In-process and sequential (PGlite has one connection), the same two
// statements as bench/pgbench.ts's sqlRedeemTps. `npm run bench` runs it too (pgliteSqlRedeem).
//   npx tsx bench/pglite-sql-redeem.ts [--count=N]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openPglite } from '../src/db/database.ts';
import { migrate } from '../src/db/migrate.ts';
import { createPglite, pgliteRunner } from '../src/db/pglite/statements.ts';
import { toWire } from '../src/db/wire-values.ts';
import { SQL_REDEEM_FIXTURES } from './pgbench.ts';

/**
 * Per second, sequential: one query by primary key, and a sync redeem's two statements. The
 * database is made and migrated through the gateway's seam, then timed on this thread with the
 * statement runner the seam's PGlite thread uses (src/db/pglite/statements.ts), named as the
 * gateway's hot-path statements are (pgbench runs -M prepared): the SQL alone, without the hop
 * between threads the serving process pays, so the ceiling is PGlite's own speed.
 */
export async function pgliteSqlRedeem(count: number): Promise<{ one: number; redeem: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'pglite-sql-redeem-'));
  try {
    const setup = await openPglite(dir);
    try {
      await migrate(setup);
      for (const statement of SQL_REDEEM_FIXTURES) await setup.query(statement);
      await setup.query('create table bench_one (id integer primary key, n integer not null)');
      await setup.query('insert into bench_one values (1, 42)');
    } finally {
      await setup.close();
    }
    const db = await createPglite(dir);
    try {
      const run = pgliteRunner(db);
      const query = (sql: string, params: unknown[], name: string) => run(sql, toWire(params), name, false);
      const rate = async (body: (i: number) => Promise<unknown>) => {
        for (let i = 0; i < 200; i++) await body(-1 - i); // warm-up
        const start = performance.now();
        for (let i = 0; i < count; i++) await body(i);
        return count / ((performance.now() - start) / 1000);
      };
      const one = await rate(() => query('select n from bench_one where id = $1', [1], 'bench_one'));
      const redeem = await rate(async (i) => {
        const customer = 1 + (Math.abs(i) % 200);
        const n = i < 0 ? 1_000_000 - i : i + 1;
        await query('select bench_start($1, $2)', [customer, n], 'bench_start');
        await query('select bench_finish($1, $2)', [customer, n], 'bench_finish');
      });
      return { one, redeem };
    } finally {
      await db.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  const { values } = parseArgs({ options: { count: { type: 'string', default: '2000' } } });
  const count = Number(values.count);
  const { one, redeem } = await pgliteSqlRedeem(count);
  process.stdout.write(
    `PGlite, ${count} each, sequential: one query ${one.toFixed(0)}/s, a sync redeem's SQL alone ` +
      `${redeem.toFixed(0)}/s, ratio ${(redeem / one).toFixed(3)}\n`,
  );
}

if (process.argv[1] && import.meta.filename === process.argv[1])
  main().catch((err: unknown) => {
    process.stderr.write(`failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  });
