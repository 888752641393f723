// The sandbox activator (docs/reference/redeem.md#activators): deterministic, no network, and no statement of its
// own on the way to an answer. Its memory of activated codes lives in the sandbox_redemptions
// table, per mode, keyed by the code's keyed hash; an activation hands the row back with its
// answer (ActivationOutcome.memory) and the outcome's commit writes it (redeem_record_outcome),
// answering code_used instead when the code is remembered already. `status` and `check` read it.
// A row is written under the hash of the ring's first key and found under every key of the ring
// (memoryHashes), so an encryption-key rotation and a restart forget nothing; the rotation then
// rewrites the rows under the new first key (core/sweeper/rotation.ts).
import { setTimeout as sleep } from 'node:timers/promises';
import type { ActivationOutcome, Activator, CodeCheckState } from '../core/activator.ts';
import { codeHashes } from '../core/crypto/code-crypto.ts';
import { CATALOG_UC } from '../core/stock/catalog.ts';
import type { Mode } from '../core/vocabulary.ts';
import type { Queryable } from '../db/database.ts';

/** How late a SLOW code is answered when the caller names no delay (the SANDBOX_SLOW_MS setting's default). */
const DEFAULT_SLOW_MS = 2000;

/** A caller code reports a category when it ends in -<size> of the catalog (GIFT-AB12CD-660). */
function categoryOf(code: string): { category: string | null; uc: number | null } {
  const m = /-(\d+)$/.exec(code);
  const uc = m ? Number(m[1]) : null;
  return uc !== null && (CATALOG_UC as readonly number[]).includes(uc)
    ? { category: String(uc), uc }
    : { category: null, uc: null };
}

/**
 * The hashes a code's memory row may have: under the ring's first key (a new row's) and under the
 * older keys (a row written before a rotation that has not rewritten it yet).
 */
export function memoryHashes(codeKey: Buffer, code: string): { codeHash: string; olderHashes: string[] } {
  const [codeHash, ...olderHashes] = codeHashes(codeKey, code);
  return { codeHash: codeHash!, olderHashes };
}

export function createSandboxActivator(deps: {
  db: Queryable;
  codeKey: Buffer;
  /** How late a SLOW code is answered: the SANDBOX_SLOW_MS setting (config.ts). */
  slowMs?: number;
  /** A pause before every answer, like a real upstream's latency (default 0). */
  delayMs?: number;
}): Activator {
  const slowMs = deps.slowMs ?? DEFAULT_SLOW_MS;
  const delayMs = deps.delayMs ?? 0;
  /** The player the memory holds for an activated code, or null. */
  const rememberedPlayer = async (mode: Mode, code: string) => {
    const r = await deps.db.query<{ playerId: string }>(
      'select player_id as "playerId" from sandbox_redemptions where mode = $1 and code_hash = any($2) limit 1',
      [mode, codeHashes(deps.codeKey, code)],
    );
    return r.rows[0]?.playerId ?? null;
  };
  return {
    name: 'sandbox',
    async activate({ mode, code, playerId }): Promise<ActivationOutcome> {
      if (delayMs > 0) await sleep(delayMs);
      const reported = categoryOf(code);
      const answer = (status: ActivationOutcome['status'], unknown = false): ActivationOutcome => ({
        status,
        unknown,
        ...reported,
      });
      if (playerId.startsWith('000')) return answer('bad_player');
      if (code.includes('USED')) return answer('code_used');
      if (code.includes('INVALID')) return answer('invalid_code');
      if (code.includes('FAIL')) return answer('failed');
      if (code.includes('TIMEOUT')) return answer('failed', true);
      // No statement here: the answer is provisional, and the memory it rests on is written by
      // the commit that records the outcome (which records code_used instead when the code is
      // remembered already: activated before, or by a request that committed first).
      const activated: ActivationOutcome = {
        ...answer('activated'),
        memory: { mode, ...memoryHashes(deps.codeKey, code), playerId },
      };
      // A SLOW code is decided at once and answered late, like an upstream that is slow to reply.
      if (code.includes('SLOW')) await sleep(slowMs);
      return activated;
    },
    async status({ mode, code }) {
      if (code.includes('USED')) return { redeemed: true, playerId: null };
      const playerId = await rememberedPlayer(mode, code);
      return playerId === null ? { redeemed: false } : { redeemed: true, playerId };
    },
    // What `activate` would answer, in its order, with no player (so never bad_player) and
    // nothing written; a remembered code is what the outcome's commit would turn into code_used.
    // A SLOW code is answered at once: only its activation is slow.
    async check({ mode, code }): Promise<CodeCheckState> {
      if (delayMs > 0) await sleep(delayMs);
      if (code.includes('USED')) return 'used';
      if (code.includes('INVALID')) return 'invalid';
      if (code.includes('FAIL') || code.includes('TIMEOUT')) return 'unknown';
      return (await rememberedPlayer(mode, code)) === null ? 'valid' : 'used';
    },
  };
}
