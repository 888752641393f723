// Who is making an admin change: the operator (by name and role), the request that carries it and
// the client address it came from. Every core function that changes state for the operator takes
// one, and writes it into the audit row (and ledger entry) of the change, in the change's own
// transaction: nothing is reconstructed from request logs afterwards.

export type OperatorRole = 'admin' | 'viewer';

export interface Actor {
  /** The operator's id (`op_root` for the bearer of ADMIN_TOKEN). */
  operatorId: string;
  /** The operator's name (`root` for the bearer of ADMIN_TOKEN): the audit row's `actor`. */
  name: string;
  role: OperatorRole;
  /** The admin answer's X-Request-Id. */
  requestId: string;
  /** The client address (the TCP peer, or what a trusted proxy says). */
  ip: string;
}

/** The operator that authenticated a request, before it is tied to one request. */
export type Operator = Pick<Actor, 'operatorId' | 'name' | 'role'>;

export const ROOT_OPERATOR: Operator = { operatorId: 'op_root', name: 'root', role: 'admin' };
