// How a read across customers is made again shard group by shard group while a Citus worker does
// not answer (src/db/reachable-shards.ts): its parameters become literals PostgreSQL reads as it
// would have read them bound, and only the tables it reads become their shards. The read itself
// with a worker stopped is in citus-faults.test.ts; here, the text it sends, and the plain read on
// every database.
import { describe, expect, it } from 'vitest';
import { onShards, readAcrossCustomers, withLiterals } from '../../src/db/reachable-shards.ts';
import { openTestDatabase } from '../helpers/db.ts';

describe('withLiterals', () => {
  it('reads back as the bound parameters: quotes, backslashes, a percent sign, null, arrays, times, numbers', async () => {
    const t = await openTestDatabase();
    try {
      const sql = `select $1::text as a, $2::text as b, $3::text[] as c, $4::timestamptz as d, $5::int as e,
                          $6::text as f, $7::bigint[] as g, $8::boolean as h`;
      const params = [
        "it's 100%",
        null,
        ['a', 'b"c', "d'e"],
        new Date('2026-11-29T21:00:00.123Z'),
        42,
        'back\\slash $1',
        [1, 2],
        true,
      ];
      const bound = await t.db.query(sql, params);
      const literal = await t.db.query(withLiterals(sql, params));
      expect(literal.rows).toEqual(bound.rows);
    } finally {
      await t.close();
    }
  });

  it('refuses a statement that uses a parameter it was not given', () => {
    expect(() => withLiterals('select $2', [1])).toThrow(/uses \$2, and has 1 parameters/);
  });
});

describe('onShards', () => {
  it('names the shards after from and join only, and leaves other tables and columns alone', () => {
    const shards = new Map([
      ['jobs', 'jobs_102008'],
      ['job_codes', 'job_codes_102040'],
    ]);
    expect(
      onShards(
        `select j.id, jobs_total from jobs j join job_codes c on c.job_id = j.id
          where exists (select 1 from job_codes x) and j.id in (select id from work_queue)`,
        shards,
      ),
    ).toBe(
      `select j.id, jobs_total from jobs_102008 j join job_codes_102040 c on c.job_id = j.id
          where exists (select 1 from job_codes_102040 x) and j.id in (select id from work_queue)`,
    );
  });
});

describe('readAcrossCustomers', () => {
  it('is the plain read when every worker answers (and on PGlite and PostgreSQL)', async () => {
    const t = await openTestDatabase();
    try {
      const r = await readAcrossCustomers<{ n: number; s: string }>(t.db, {
        tables: ['jobs'],
        sql: `select count(*)::int as n, $1::text as s from jobs where id = $2`,
        params: ["it's 100%", 'job_none'],
      });
      expect(r).toEqual({ rows: [{ n: 0, s: "it's 100%" }], partial: false });
    } finally {
      await t.close();
    }
  });
});
