// What every handler of the bot has: grammY's context, the process's context (core's door), the
// person the update comes from (once the gate named them) and the update's own request id (the
// audit rows of its changes carry it).
import type { Context } from 'grammy';
import type { BotUser } from '../core/bot/links.ts';
import { claimUpdate } from '../core/bot/updates.ts';
import type { Queryable } from '../db/database.ts';
import type { ServerContext } from '../http/context.ts';

export type BotContext = Context & {
  app: ServerContext;
  /** The linked person; null only for `/start <token>` from someone not linked yet. */
  person: BotUser | null;
  requestId: string;
};

/** A linked person (handlers after the gate always have one). */
export function personOf(c: BotContext): BotUser {
  if (!c.person) throw new Error('no linked person on this update');
  return c.person;
}

const SKIP = Symbol('already acted on');

/**
 * Runs `effect` in one transaction with the update recorded as acted on (contract 14.1), so a
 * redelivered update does nothing. Returns null when the update was acted on before.
 */
export async function actOnce<T>(
  c: BotContext,
  kind: string,
  effect: (tx: Queryable) => Promise<T>,
): Promise<T | null> {
  const { db, clock } = c.app;
  const updateId = c.update.update_id;
  const result = await db.transaction(async (tx) => {
    if (!(await claimUpdate(tx, updateId, kind, clock.now()))) return SKIP;
    return effect(tx);
  });
  return result === SKIP ? null : (result as T);
}
