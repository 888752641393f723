// Named operators (docs/reference/operators-and-audit.md#operators-and-roles): a name, a role and a token shown once (`adm_` + 40 base62),
// stored only as its SHA-256 digest. `root` (migration 0050) is the bearer of ADMIN_TOKEN.
import type { Database, Queryable } from '../../db/database.ts';
import { isPgError, PG_UNIQUE_VIOLATION } from '../../db/database.ts';
import { type Clock, isoUtc } from '../clock.ts';
import { ApiError } from '../errors.ts';
import { sha256Hex } from '../hash.ts';
import { randomBase62 } from '../ids.ts';
import { type Actor, type Operator, type OperatorRole, ROOT_OPERATOR } from './actor.ts';
import { recordAudit } from './audit.ts';

export const OPERATOR_NAME = /^[A-Za-z0-9._-]{1,64}$/;
export const OPERATOR_TOKEN = /^adm_[A-Za-z0-9]{32,}$/;
const newOperatorToken = () => `adm_${randomBase62(40)}`;
const newOperatorId = () => `op_${randomBase62(24)}`;

interface OperatorRow {
  id: string;
  name: string;
  role: OperatorRole;
  createdAt: Date;
  revokedAt: Date | null;
}

const SELECT = `select id, name, role, created_at as "createdAt", revoked_at as "revokedAt" from operators`;

const toOperator = (r: Pick<OperatorRow, 'id' | 'name' | 'role'>): Operator => ({
  operatorId: r.id,
  name: r.name,
  role: r.role,
});

/** The operator of a non-root token, or null (unknown or revoked). */
export async function findOperatorByToken(q: Queryable, token: string): Promise<Operator | null> {
  if (!OPERATOR_TOKEN.test(token)) return null;
  const r = await q.query<OperatorRow>(`${SELECT} where token_sha256 = $1 and revoked_at is null`, [
    sha256Hex(token),
  ]);
  return r.rows[0] ? toOperator(r.rows[0]) : null;
}

/** The operator of a console session, while it is not revoked. */
export async function findActiveOperator(q: Queryable, operatorId: string): Promise<Operator | null> {
  if (operatorId === ROOT_OPERATOR.operatorId) return ROOT_OPERATOR;
  const r = await q.query<OperatorRow>(`${SELECT} where id = $1 and revoked_at is null`, [operatorId]);
  return r.rows[0] ? toOperator(r.rows[0]) : null;
}

export const operatorView = (o: OperatorRow) => ({
  operator_id: o.id,
  name: o.name,
  role: o.role,
  created_at: isoUtc(o.createdAt),
  revoked_at: o.revokedAt ? isoUtc(o.revokedAt) : null,
});

export async function listOperators(q: Queryable) {
  const r = await q.query<OperatorRow>(`${SELECT} order by id = 'op_root' desc, created_at, id`);
  return r.rows.map(operatorView);
}

/** Creates an operator and its audit row; the token is returned once and never stored. */
export async function createOperator(
  db: Database,
  actor: Actor,
  spec: { name: string; role: OperatorRole },
  clock: Clock,
) {
  const token = newOperatorToken();
  const id = newOperatorId();
  try {
    await db.transaction(async (tx) => {
      await tx.query(
        'insert into operators (id, name, role, token_sha256, created_at) values ($1, $2, $3, $4, $5)',
        [id, spec.name, spec.role, sha256Hex(token), clock.now()],
      );
      await recordAudit(
        tx,
        actor,
        {
          action: 'operator.create',
          customerId: null,
          target: id,
          details: { name: spec.name, role: spec.role },
        },
        clock,
      );
    });
  } catch (err) {
    if (isPgError(err, PG_UNIQUE_VIOLATION))
      throw new ApiError('conflict', `the name ${spec.name} is in use`);
    throw err;
  }
  return { operatorId: id, name: spec.name, role: spec.role, token };
}

/** Revokes an operator (404 unknown, 409 root); revoking a revoked one changes nothing more. */
export async function revokeOperator(db: Database, actor: Actor, operatorId: string, clock: Clock) {
  if (operatorId === ROOT_OPERATOR.operatorId) throw new ApiError('conflict', 'root cannot be revoked');
  return db.transaction(async (tx) => {
    const r = await tx.query<OperatorRow>(
      `update operators set revoked_at = coalesce(revoked_at, $2) where id = $1
       returning id, name, role, created_at as "createdAt", revoked_at as "revokedAt"`,
      [operatorId, clock.now()],
    );
    const row = r.rows[0];
    if (!row) throw new ApiError('not_found', 'unknown operator');
    await recordAudit(
      tx,
      actor,
      { action: 'operator.revoke', customerId: null, target: row.id, details: { name: row.name } },
      clock,
    );
    return operatorView(row);
  });
}
