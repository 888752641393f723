// The schema's shape for sharding by customer, on every database: each table that holds one
// customer's rows has its customer's id, and every primary key, unique index and foreign key of
// those tables names it first (what a shard can check on its own). The two rules that span
// customers (a code in any stock is a duplicate; a person is bound to one customer at a time) are
// kept by the code under a lock, and are tested in test/stock/stock.test.ts and test/bot/bot-links.test.ts.
// On a Citus coordinator the tables are also distributed, co-located (src/db/citus.ts).
import { afterAll, beforeAll, expect, test } from 'vitest';
import {
  COORDINATOR_FUNCTIONS,
  COORDINATOR_TABLES,
  CUSTOMER_TABLES,
  DISTRIBUTED_FUNCTIONS,
  hasCitus,
  REFERENCE_TABLES,
} from '../../src/db/citus.ts';
import { openTestDatabase, type TestDatabase } from '../helpers/db.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await openTestDatabase();
});
afterAll(() => t.close());

const key = (table: string) => (table === 'customers' ? 'id' : 'customer_id');

test('every table is a customer table, a reference table or on the coordinator, each with a reason', async () => {
  const r = await t.db.query<{ name: string }>(
    `select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = current_schema() and c.relkind in ('r', 'p') order by 1`,
  );
  const placed = new Set([
    ...CUSTOMER_TABLES,
    ...Object.keys(REFERENCE_TABLES),
    ...Object.keys(COORDINATOR_TABLES),
  ]);
  expect(r.rows.map((x) => x.name).filter((name) => !placed.has(name))).toEqual([]);
  // A customer table has its customer's id, never null.
  const cols = await t.db.query<{ table: string }>(
    `select table_name as table from information_schema.columns
      where table_schema = current_schema() and column_name = 'customer_id' and is_nullable = 'NO'`,
  );
  const withId = new Set(cols.rows.map((c) => c.table));
  expect(CUSTOMER_TABLES.filter((name) => name !== 'customers' && !withId.has(name))).toEqual([]);
});

test('every key of a customer table names the customer first', async () => {
  const r = await t.db.query<{ table: string; name: string; kind: string; columns: string[] | string }>(
    `select cl.relname as table, i.relname as name,
            case when x.indisprimary then 'primary key' else 'unique' end as kind,
            array(select a.attname::text from unnest(x.indkey) with ordinality k(n, o)
                    join pg_attribute a on a.attrelid = x.indrelid and a.attnum = k.n order by k.o) as columns
       from pg_index x join pg_class i on i.oid = x.indexrelid join pg_class cl on cl.oid = x.indrelid
      where x.indisunique and cl.relname = any($1)`,
    [CUSTOMER_TABLES],
  );
  expect(r.rows.length).toBeGreaterThan(CUSTOMER_TABLES.length);
  const wrong = r.rows
    .map((k) => ({ ...k, columns: typeof k.columns === 'string' ? parseArray(k.columns) : k.columns }))
    .filter((k) => k.columns[0] !== key(k.table))
    .map((k) => `${k.table}: ${k.kind} ${k.name} (${k.columns.join(', ')})`);
  expect(wrong).toEqual([]);
});

test('every foreign key between customer tables names the customer on both sides', async () => {
  const r = await t.db.query<{ table: string; def: string; target: string }>(
    `select conrelid::regclass::text as table, confrelid::regclass::text as target, pg_get_constraintdef(oid) as def
       from pg_constraint where contype = 'f' and conrelid::regclass::text = any($1)`,
    [CUSTOMER_TABLES],
  );
  expect(r.rows.length).toBeGreaterThan(10);
  const wrong = r.rows
    .filter(
      (f) =>
        !f.def.startsWith(`FOREIGN KEY (customer_id`) ||
        !f.def.includes(`REFERENCES ${f.target}(${key(f.target)}`),
    )
    .map((f) => `${f.table}: ${f.def}`);
  expect(wrong).toEqual([]);
});

test('on a Citus coordinator: every customer table distributed by its customer, co-located with customers', async (ctx) => {
  if (!(await hasCitus(t.db))) return ctx.skip('DATABASE_URL is not a Citus coordinator');
  const r = await t.db.query<{ table: string; type: string; column: string; colocation: number }>(
    `select table_name::text as table, citus_table_type as type, distribution_column as column,
            colocation_id as colocation from citus_tables`,
  );
  const byName = new Map(r.rows.map((x) => [x.table, x]));
  const customers = byName.get('customers');
  expect(customers).toMatchObject({ type: 'distributed', column: 'id' });
  const wrong = CUSTOMER_TABLES.filter((name) => {
    const x = byName.get(name);
    return x?.type !== 'distributed' || x.column !== key(name) || x.colocation !== customers?.colocation;
  });
  expect(wrong).toEqual([]);
  // A reference table is copied to every node.
  expect(Object.keys(REFERENCE_TABLES).filter((name) => byName.get(name)?.type !== 'reference')).toEqual([]);
  // What stays on the coordinator is not distributed by accident either.
  expect(Object.keys(COORDINATOR_TABLES).filter((name) => byName.get(name)?.type === 'distributed')).toEqual(
    [],
  );
});

test('every SQL function with a customer argument is distributed by it or stays on the coordinator, with a reason', async () => {
  // PGlite hands the argument names back as the array's text.
  const r = await t.db.query<{ name: string; args: string[] | string }>(
    `select p.proname as name, p.proargnames as args from pg_proc p
      where p.pronamespace = current_schema()::regnamespace and p.proargnames is not null order by 1`,
  );
  const withCustomer = r.rows
    .filter((x) => (Array.isArray(x.args) ? x.args : parseArray(x.args)).includes('p_customer'))
    .map((x) => x.name);
  const listed = [...Object.keys(DISTRIBUTED_FUNCTIONS), ...Object.keys(COORDINATOR_FUNCTIONS)].sort();
  expect([...new Set(withCustomer)].sort()).toEqual(listed);
  expect(Object.values(DISTRIBUTED_FUNCTIONS).filter((arg) => arg !== 'p_customer')).toEqual([]);
});

test('on a Citus coordinator: the functions that act for one customer are distributed functions keyed by it, co-located with customers', async (ctx) => {
  if (!(await hasCitus(t.db))) return ctx.skip('DATABASE_URL is not a Citus coordinator');
  const r = await t.db.query<{ name: string; arg: string; colocation: number }>(
    `select p.proname as name, p.proargnames[d.distribution_argument_index + 1] as arg,
            d.colocationid as colocation
       from pg_dist_object d join pg_proc p on p.oid = d.objid
      where d.classid = 'pg_proc'::regclass and d.distribution_argument_index is not null
      order by 1`,
  );
  const customers = await t.db.query<{ colocation: number }>(
    `select colocation_id as colocation from citus_tables where table_name = 'customers'::regclass`,
  );
  expect(r.rows).toEqual(
    Object.entries(DISTRIBUTED_FUNCTIONS)
      .sort()
      .map(([name, arg]) => ({ name, arg, colocation: customers.rows[0]!.colocation })),
  );
});

/** PGlite hands a text[] back as its text form. */
function parseArray(text: string): string[] {
  return text.replace(/^\{|\}$/g, '').split(',');
}
