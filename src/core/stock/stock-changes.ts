// The operator's stock import (docs/reference/operators-and-audit.md#stock-import, docs/reference/operators-and-audit.md#audit-log): the codes and the audit row in one
// transaction. The audit row holds the counts, never a code.
import type { Database, Queryable } from '../../db/database.ts';
import { customerExists } from '../accounts/accounts.ts';
import type { Clock } from '../clock.ts';
import { ApiError } from '../errors.ts';
import type { Actor } from '../operators/actor.ts';
import { recordAudit } from '../operators/audit.ts';
import type { Mode } from '../vocabulary.ts';
import { type ImportIssue, importIssues } from './import-issues.ts';
import { type ImportResult, importStock } from './stock.ts';

export async function importStockAs(
  deps: { db: Database; clock: Clock; codeKey: Buffer },
  actor: Actor,
  input: { customerId: number; mode: Mode; category: string; codes: readonly string[] },
): Promise<ImportResult & { issues: ImportIssue[] }> {
  return deps.db.transaction((tx) => importStockIn(tx, deps, actor, input));
}

/** The same import inside a transaction the caller owns (the bot records its update there too). */
export async function importStockIn(
  tx: Queryable,
  deps: { clock: Clock; codeKey: Buffer },
  actor: Actor,
  input: { customerId: number; mode: Mode; category: string; codes: readonly string[] },
): Promise<ImportResult & { issues: ImportIssue[] }> {
  if (!(await customerExists(tx, input.customerId))) throw new ApiError('not_found', 'unknown customer');
  const issues = await importIssues(tx, deps.codeKey, input.codes);
  const result = await importStock(tx, deps.codeKey, input, deps.clock);
  await recordAudit(
    tx,
    actor,
    {
      action: 'stock.import',
      customerId: input.customerId,
      target: input.category,
      details: { mode: input.mode, category: input.category, ...result },
    },
    deps.clock,
  );
  return { ...result, issues };
}
