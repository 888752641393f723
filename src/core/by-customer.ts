// Read, then act per customer: a pass that spans customers (retention, the quarantine check's
// claim, the idempotency key purge) finds its rows with one read, which on Citus asks every
// worker, then acts one customer at a time, each statement or transaction naming that customer,
// so it runs on that customer's worker (docs/running/citus.md#one-worker-per-statement).

/** Rows grouped by their customer: customers in the order first seen, each one's rows in theirs. */
export function byCustomer<T extends { customerId: number }>(rows: readonly T[]): Map<number, T[]> {
  const out = new Map<number, T[]>();
  for (const row of rows) {
    const group = out.get(row.customerId);
    if (group) group.push(row);
    else out.set(row.customerId, [row]);
  }
  return out;
}
