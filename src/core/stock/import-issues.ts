// Which codes of a stock import were not added, and why (docs/reference/operators-and-audit.md#stock-import counts them; the operator
// needs to find them): by their position in the submitted list, never by the code itself, which
// is bearer value and never echoed.
import type { Queryable } from '../../db/database.ts';
import { CODE_PATTERN, codeHash, normaliseCode } from '../crypto/code-crypto.ts';

/** Issues listed at most (the counts stay exact beyond it). */
export const MAX_ISSUES = 1000;

export interface ImportIssue {
  /** 0-based position in the submitted `codes`. */
  index: number;
  kind: 'rejected' | 'duplicate';
  reason: string;
}

/**
 * The issues of an import, read in the import's transaction before it inserts: a malformed code,
 * a repeat of an earlier position, or a code already in some stock (any customer or mode).
 */
export async function importIssues(
  q: Queryable,
  codeKey: Buffer,
  codes: readonly string[],
): Promise<ImportIssue[]> {
  const issues: ImportIssue[] = [];
  const firstAt = new Map<string, number>();
  const fresh: { index: number; hash: string }[] = [];
  codes.forEach((raw, index) => {
    const code = normaliseCode(raw);
    if (!CODE_PATTERN.test(code)) {
      issues.push({ index, kind: 'rejected', reason: 'not a code: 4 to 64 letters, digits or "-"' });
    } else if (firstAt.has(code)) {
      issues.push({
        index,
        kind: 'duplicate',
        reason: `repeats position ${firstAt.get(code)} of this import`,
      });
    } else {
      firstAt.set(code, index);
      fresh.push({ index, hash: codeHash(codeKey, code) });
    }
  });
  const existing = new Set<string>();
  for (let i = 0; i < fresh.length; i += 1000) {
    const r = await q.query<{ hash: string }>(
      'select code_hash as hash from stock_codes where code_hash = any($1::text[])',
      [fresh.slice(i, i + 1000).map((f) => f.hash)],
    );
    for (const row of r.rows) existing.add(row.hash);
  }
  for (const f of fresh)
    if (existing.has(f.hash)) issues.push({ index: f.index, kind: 'duplicate', reason: 'already in stock' });
  return issues.sort((a, b) => a.index - b.index).slice(0, MAX_ISSUES);
}
