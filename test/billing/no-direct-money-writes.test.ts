// Each money rule exists once, in SQL (src/db/functions/billing.sql): no TypeScript file writes
// the wallet ledger, an account's balance or hold, or daily usage itself. This scans the SQL in
// src/**/*.ts and fails naming the file, so a second copy of a money rule cannot creep back.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { expect, test } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..', '..');

/** Writes that only the SQL money functions may make (statement text, case-insensitive). */
const FORBIDDEN: { what: string; pattern: RegExp }[] = [
  {
    what: 'writes wallet_ledger',
    pattern: /\b(insert\s+into|update|delete\s+from|truncate)\s+wallet_ledger\b/i,
  },
  { what: 'writes daily_usage', pattern: /\b(insert\s+into|update|delete\s+from|truncate)\s+daily_usage\b/i },
  // An account row may be made (the billing lock), never given money outside SQL.
  {
    what: 'writes accounts.balance_micros/held_micros',
    pattern: /\b(update\s+accounts\b|insert\s+into\s+accounts\b)[^;`'"]*\b(balance_micros|held_micros)\b/i,
  },
  { what: 'deletes accounts', pattern: /\b(delete\s+from|truncate)\s+accounts\b/i },
];

/** Files allowed one of these writes, with the reason. None today (retention deletes no money). */
const ALLOWED: Record<string, string> = {};

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

function moneyWrites(text: string): string[] {
  return FORBIDDEN.filter((f) => f.pattern.test(text)).map((f) => f.what);
}

test('no TypeScript file under src/ writes the ledger, a balance or daily usage directly', () => {
  const files = tsFiles(join(ROOT, 'src'));
  expect(files.length).toBeGreaterThan(50);
  const offenders = files
    .map((f) => ({ file: relative(ROOT, f), writes: moneyWrites(readFileSync(f, 'utf8')) }))
    .filter((o) => o.writes.length > 0 && !(o.file in ALLOWED))
    .map((o) => `${o.file}: ${o.writes.join(', ')} (call the SQL function in src/db/functions/billing.sql)`);
  expect(offenders).toEqual([]);
});

test('the scan finds each kind of direct write (it is not vacuous)', () => {
  expect(moneyWrites('await q.query(`insert into wallet_ledger (customer_id) values ($1)`)')).toEqual([
    'writes wallet_ledger',
  ]);
  expect(moneyWrites("q.query('UPDATE daily_usage SET used = used + 1')")).toEqual(['writes daily_usage']);
  expect(
    moneyWrites('`update accounts\n   set held_micros = held_micros - $3 where customer_id = $1`'),
  ).toEqual(['writes accounts.balance_micros/held_micros']);
  expect(
    moneyWrites("'insert into accounts (customer_id, mode, balance_micros) values ($1, $2, $3)'"),
  ).toEqual(['writes accounts.balance_micros/held_micros']);
  expect(moneyWrites("'delete from daily_usage where day < $1'")).toEqual(['writes daily_usage']);
  // Reads and making the account row (no money) are fine.
  expect(moneyWrites("'select balance_micros from accounts; select * from wallet_ledger'")).toEqual([]);
  expect(
    moneyWrites("'insert into accounts (customer_id, mode) values ($1, $2) on conflict do nothing'"),
  ).toEqual([]);
});
