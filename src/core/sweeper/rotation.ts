// Re-encryption under the first key of the keyring (docs/reference/operators-and-audit.md#encryption-key-rotation). A rotation is a row of
// encryption_rotation in state `running`; every process runs the rotation loop below, which, while
// it is running, takes batches of rows not yet under this process's first key (stock codes, job
// codes, webhook secrets) with FOR UPDATE SKIP LOCKED, decrypts each with the key its kid names,
// recomputes a code's lookup hash under the first key and writes it back encrypted and bound to
// its row under that key, all in one short transaction per batch. So it runs under load (a batch
// never waits for a row a request holds, and a request never waits long for a batch), a kill
// loses at most one uncommitted batch, and a restart resumes: the state is in the database and
// "not yet under the first key" is read from the rows themselves. `v1:` values (no key id, no
// row binding) are rewritten as bound v2 values too. When no row is left the rotation is idle.
import type { Logger } from 'pino';
import type { Queryable } from '../../db/database.ts';
import { type BackgroundLoop, startBackgroundLoop } from '../background-loop.ts';
import type { AppContext } from '../context.ts';
import {
  codeHash,
  codeHashes,
  currentPrefix,
  decryptCode,
  decryptSecret,
  encryptCode,
  encryptSecret,
  keyId,
  ringKeyIds,
  storedKeyId,
} from '../crypto/code-crypto.ts';
import { rekey } from '../jobs/codes.ts';
import type { Actor } from '../operators/actor.ts';
import { recordAudit } from '../operators/audit.ts';

export type RotationDeps = Pick<AppContext, 'db' | 'clock' | 'codeKey'> & {
  logger: Pick<Logger, 'error' | 'warn' | 'info'>;
};

/** Rows rewritten per transaction (small: a batch holds its rows' locks only that long). */
export const ROTATION_BATCH = 100;

export interface EncryptionStatus {
  currentKeyId: string;
  keyIds: string[];
  rowsByKeyId: Record<string, number>;
  rotation: 'idle' | 'running';
  rowsRewritten: number;
  startedAt: Date | null;
  finishedAt: Date | null;
}

/** Stored ciphertexts of every table, counted by the key id they name (`v1` for old values). */
/** The one row of encryption_rotation as the metrics read it at scrape time; null before any rotation. */
export async function rotationProgress(
  q: Queryable,
): Promise<{ state: string; target: string; rewritten: number } | null> {
  const r = await q.query<{ state: string; target: string; rewritten: number }>(
    `select state, target_key_id as target, rows_rewritten::int8 as rewritten from encryption_rotation`,
  );
  return r.rows[0] ?? null;
}

export async function rowsByKeyId(q: Queryable): Promise<Record<string, number>> {
  const r = await q.query<{ kid: string; n: number }>(
    `select kid, sum(n)::int8 as n from (
       select case when code_encrypted like 'v2:%' then split_part(code_encrypted, ':', 2) else 'v1' end as kid, count(*) as n
         from stock_codes where code_encrypted is not null group by 1
       union all
       select case when code_encrypted like 'v2:%' then split_part(code_encrypted, ':', 2) else 'v1' end, count(*)
         from job_codes where code_encrypted is not null group by 1
       union all
       select case when secret_encrypted like 'v2:%' then split_part(secret_encrypted, ':', 2) else 'v1' end, count(*)
         from webhooks group by 1
     ) k group by kid order by kid`,
  );
  return Object.fromEntries(r.rows.map((row) => [row.kid, Number(row.n)]));
}

export async function encryptionStatus(
  deps: Pick<RotationDeps, 'db' | 'codeKey'>,
): Promise<EncryptionStatus> {
  const [rows, state] = await Promise.all([rowsByKeyId(deps.db), loadRotation(deps.db)]);
  return {
    currentKeyId: keyId(deps.codeKey),
    keyIds: ringKeyIds(deps.codeKey),
    rowsByKeyId: rows,
    rotation: state?.state ?? 'idle',
    rowsRewritten: state?.rowsRewritten ?? 0,
    startedAt: state?.startedAt ?? null,
    finishedAt: state?.finishedAt ?? null,
  };
}

async function loadRotation(q: Queryable) {
  const r = await q.query<{
    state: 'idle' | 'running';
    targetKeyId: string;
    rowsRewritten: number;
    startedAt: Date;
    finishedAt: Date | null;
  }>(
    `select state, target_key_id as "targetKeyId", rows_rewritten::int8 as "rowsRewritten",
            started_at as "startedAt", finished_at as "finishedAt"
       from encryption_rotation`,
  );
  const row = r.rows[0];
  return row ? { ...row, rowsRewritten: Number(row.rowsRewritten) } : null;
}

/**
 * Starts a rotation to this process's first key (POST /admin/v1/encryption/rotate). Starting one
 * while one runs restarts it toward this key: the rows it has not reached are simply read again.
 */
export async function startRotation(
  deps: Pick<RotationDeps, 'db' | 'clock' | 'codeKey'>,
  actor: Actor,
): Promise<EncryptionStatus> {
  const target = keyId(deps.codeKey);
  await deps.db.transaction(async (tx) => {
    await tx.query(
      `insert into encryption_rotation (id, state, target_key_id, started_at, finished_at, rows_rewritten)
       values (true, 'running', $1, $2, null, 0)
       on conflict (id) do update set state = 'running', target_key_id = $1, started_at = $2,
         finished_at = null, rows_rewritten = 0`,
      [target, deps.clock.now()],
    );
    // The audit row (docs/reference/operators-and-audit.md#audit-log) in the transaction that starts the rotation; key ids only.
    await recordAudit(
      tx,
      actor,
      {
        action: 'encryption.rotate',
        customerId: null,
        target,
        details: { target_key_id: target, key_ids: ringKeyIds(deps.codeKey) },
      },
      deps.clock,
    );
  });
  return encryptionStatus(deps);
}

/**
 * One batch of every table. Returns the rows rewritten; when the rotation runs and no row is left
 * under another key, marks it idle. Does nothing unless a rotation to this process's first key is
 * running (a process with another first key leaves it to the processes that have it).
 */
export async function rotateOnce(deps: RotationDeps, batch = ROTATION_BATCH): Promise<number> {
  const state = await loadRotation(deps.db);
  if (state?.state !== 'running' || state.targetKeyId !== keyId(deps.codeKey)) return 0;
  const prefix = `${currentPrefix(deps.codeKey)}%`;
  // Found by a read, then rewritten a customer at a time, each in its own transaction: on Citus
  // one worker's rows (docs/running/citus.md#one-worker-per-statement).
  let done = 0;
  for (const customerId of await customersToRewrite(deps.db, prefix, batch)) {
    done += await deps.db.transaction(async (tx) => {
      const n =
        (await rewriteStockCodes(tx, deps, { customerId, prefix, batch })) +
        (await rewriteJobCodes(tx, deps, { customerId, prefix, batch })) +
        (await rewriteSecrets(tx, deps, { customerId, prefix, batch }));
      if (n > 0) await tx.query('update encryption_rotation set rows_rewritten = rows_rewritten + $1', [n]);
      return n;
    });
    if (done >= batch) break;
  }
  if (done > 0) return done;
  // Nothing was left (rows another process holds are its to rewrite: they are counted again).
  const left = await rowsByKeyId(deps.db);
  const current = keyId(deps.codeKey);
  if (Object.keys(left).every((kid) => kid === current)) {
    await deps.db.query(
      `update encryption_rotation set state = 'idle', finished_at = $1 where state = 'running' and target_key_id = $2`,
      [deps.clock.now(), current],
    );
    deps.logger.info({ keyId: current }, 'encryption rotation finished: every row is under the first key');
  }
  return 0;
}

/** The customers with rows not under the first key yet, at most `batch` of them. */
async function customersToRewrite(q: Queryable, prefix: string, batch: number): Promise<number[]> {
  const r = await q.query<{ customerId: number }>(
    `select customer_id as "customerId" from (
       (select customer_id from stock_codes
         where code_encrypted is not null and code_encrypted not like $1 limit $2)
       union
       (select customer_id from job_codes
         where code_encrypted is not null and code_encrypted not like $1 and state <> 'sending' limit $2)
       union
       (select customer_id from webhooks where secret_encrypted not like $1 limit $2)
     ) x order by 1 limit $2`,
    [prefix, batch],
  );
  return r.rows.map((row) => Number(row.customerId));
}

/** One customer's batch: its rows not under the key prefix, at most `batch` per table. */
interface RewriteBatch {
  customerId: number;
  prefix: string;
  batch: number;
}

/** A code row as both code tables hold it: the ciphertext and what it is bound to. */
interface StoredCode {
  customerId: number;
  mode: string;
  codeHash: string;
  enc: string;
}

/** A code moved under the first key: the code, its lookup hash and its ciphertext under that key. */
interface Reencrypted {
  code: string;
  hash: string;
  enc: string;
}

/**
 * The step both code tables share: decrypt each row's code with the key its kid names, recompute
 * its lookup hash under the first key, encrypt it bound to the row under that key, and hand that
 * to the table's own write. Returns the rows rewritten.
 */
async function reencryptCodes<R extends StoredCode>(
  deps: RotationDeps,
  table: 'stock_codes' | 'job_codes',
  rows: R[],
  write: (row: R, moved: Reencrypted) => Promise<void>,
): Promise<number> {
  for (const row of rows) {
    const code = decryptCode(deps.codeKey, row.enc, { table, ...row });
    const hash = codeHash(deps.codeKey, code);
    const enc = encryptCode(deps.codeKey, code, {
      table,
      customerId: row.customerId,
      mode: row.mode,
      codeHash: hash,
    });
    await write(row, { code, hash, enc });
  }
  return rows.length;
}

async function rewriteStockCodes(tx: Queryable, deps: RotationDeps, b: RewriteBatch) {
  const r = await tx.query<StoredCode & { id: number }>(
    `select id, customer_id as "customerId", mode, code_hash as "codeHash", code_encrypted as enc
       from stock_codes
      where customer_id = $3 and code_encrypted is not null and code_encrypted not like $1
      limit $2 for update skip locked`,
    [b.prefix, b.batch, b.customerId],
  );
  return reencryptCodes(deps, 'stock_codes', r.rows, async (row, { hash, enc }) => {
    await tx.query(
      'update stock_codes set code_hash = $3, code_encrypted = $4 where customer_id = $1 and id = $2',
      [row.customerId, row.id, hash, enc],
    );
  });
}

async function rewriteJobCodes(tx: Queryable, deps: RotationDeps, b: RewriteBatch) {
  // A code out with the upstream keeps its hash until its outcome is recorded: the in-flight
  // index (one `sending` row per hash) must not see two spellings of one code.
  const r = await tx.query<StoredCode & { jobId: string; position: number }>(
    `select c.job_id as "jobId", c.position, j.customer_id as "customerId", j.mode, c.code_hash as "codeHash",
            c.code_encrypted as enc
       from job_codes c join jobs j on j.customer_id = c.customer_id and j.id = c.job_id
      where c.customer_id = $3 and j.customer_id = $3
        and c.code_encrypted is not null and c.code_encrypted not like $1 and c.state <> 'sending'
      limit $2 for update of c skip locked`,
    [b.prefix, b.batch, b.customerId],
  );
  return reencryptCodes(deps, 'job_codes', r.rows, async (row, { code, hash, enc }) => {
    await rekey(tx, row, hash, enc);
    await rewriteSandboxMemory(tx, row.mode, code, deps.codeKey);
  });
}

/**
 * The sandbox's memory of a code (docs/reference/redeem.md#activators: its sandbox_redemptions row, keyed by the
 * code's hash) moved under the first key, with the job code it was activated by: the memory holds
 * hashes only, so the job code's ciphertext is where the code is known. A memory row whose job
 * codes' ciphertexts were dropped by retention (docs/reference/running.md#retention) keeps its old hash: found while its key is
 * in the ring (the sandbox looks under every key of it).
 */
async function rewriteSandboxMemory(tx: Queryable, mode: string, code: string, codeKey: Buffer) {
  const [hash, ...olderHashes] = codeHashes(codeKey, code);
  if (olderHashes.length === 0) return;
  await tx.query(
    `with moved as (
       delete from sandbox_redemptions where mode = $1 and code_hash = any($2)
       returning player_id, created_at)
     insert into sandbox_redemptions (mode, code_hash, player_id, created_at)
     select $1, $3, player_id, created_at from moved order by created_at limit 1
     on conflict do nothing`,
    [mode, olderHashes, hash],
  );
}

async function rewriteSecrets(tx: Queryable, deps: RotationDeps, b: RewriteBatch) {
  const r = await tx.query<{ customerId: number; mode: string; enc: string }>(
    `select customer_id as "customerId", mode, secret_encrypted as enc
       from webhooks where customer_id = $3 and secret_encrypted not like $1
      limit $2 for update skip locked`,
    [b.prefix, b.batch, b.customerId],
  );
  for (const row of r.rows) {
    const secret = decryptSecret(deps.codeKey, row.enc, row);
    await tx.query('update webhooks set secret_encrypted = $3 where customer_id = $1 and mode = $2', [
      row.customerId,
      row.mode,
      encryptSecret(deps.codeKey, secret, row),
    ]);
  }
  return r.rows.length;
}

/**
 * The rotation loop of this process: polls every `intervalMs` (default 1000) whether a rotation
 * runs, and while it does rewrites batch after batch, pausing `pauseMs` (default 20) between
 * batches so requests keep their share of the database.
 */
export function startRotationLoop(
  deps: RotationDeps,
  opts: { intervalMs?: number; pauseMs?: number; batch?: number } = {},
): BackgroundLoop {
  const pauseMs = opts.pauseMs ?? 20;
  return startBackgroundLoop({
    name: 'encryption rotation',
    intervalMs: opts.intervalMs ?? 1000,
    logger: deps.logger,
    async pass(signal) {
      while (!signal.aborted && (await rotateOnce(deps, opts.batch)) > 0) {
        await new Promise((r) => setTimeout(r, pauseMs));
      }
    },
  });
}

/**
 * The start check (docs/reference/operators-and-audit.md#encryption-key-rotation): every stored ciphertext names a key of the ring. Throws one
 * line naming the first key id the ring lacks; `v1` values (no key id) must open with a ring key.
 */
export async function checkKeyringCoversRows(q: Queryable, codeKey: Buffer): Promise<void> {
  const ring = new Set(ringKeyIds(codeKey));
  const stored = await rowsByKeyId(q);
  const missing = Object.keys(stored).find((kid) => kid !== 'v1' && !ring.has(kid));
  if (missing)
    throw new KeyringError(
      `CODE_ENCRYPTION_KEY lacks key id ${missing}: ${stored[missing]} stored rows are encrypted under it; add that key to the list (after the first) and rotate`,
    );
  if (stored['v1']) await checkV1Opens(q, codeKey);
}

async function checkV1Opens(q: Queryable, codeKey: Buffer) {
  const r = await q.query<{ customerId: number; mode: string; codeHash: string; enc: string }>(
    `select customer_id as "customerId", mode, code_hash as "codeHash", code_encrypted as enc
       from stock_codes where code_encrypted like 'v1:%' limit 1`,
  );
  const row = r.rows[0];
  if (!row) return;
  try {
    decryptCode(codeKey, row.enc, { table: 'stock_codes', ...row });
  } catch {
    throw new KeyringError(
      `CODE_ENCRYPTION_KEY lacks the key of the stored v1 rows (written before key ids); add that key to the list and rotate`,
    );
  }
}

export class KeyringError extends Error {
  override name = 'KeyringError';
}

export { storedKeyId };
