// Every SQL function lives once (docs/architecture.md#house-rules): migrations hold tables, indexes and data
// only, and no function or trigger is defined in two function files.
import { expect, test } from 'vitest';
import { listFunctionFiles } from '../../src/db/function-files.ts';
import { listMigrations } from '../../src/db/migrate.ts';

const DEFINES = /^\s*create\s+(?:or\s+replace\s+)?(function|procedure|trigger)\s+([a-z0-9_]+)/gim;

function definitions(sql: string): string[] {
  return [...sql.matchAll(DEFINES)].map((m) => `${m[1]!.toLowerCase()} ${m[2]!.toLowerCase()}`);
}

test('no migration defines a function, procedure or trigger', () => {
  const found = listMigrations().flatMap((m) => definitions(m.sql).map((d) => `${m.name}.sql: ${d}`));
  expect(found).toEqual([]);
});

test('each function and trigger is defined in exactly one function file, once', () => {
  const where = new Map<string, string[]>();
  for (const f of listFunctionFiles())
    for (const d of definitions(f.sql)) where.set(d, [...(where.get(d) ?? []), f.name]);
  expect(where.size).toBeGreaterThan(20);
  const twice = [...where]
    .filter(([, files]) => files.length > 1)
    .map(([d, files]) => `${d}: ${files.join(', ')}`);
  expect(twice).toEqual([]);
  // The money writers are in the billing wing.
  for (const fn of ['ledger_append', 'usage_record', 'quarantine_settle', 'billing_hold'])
    expect(where.get(`function ${fn}`)).toEqual(['billing.sql']);
});
