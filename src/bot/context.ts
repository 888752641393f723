// What every handler of the bot has: grammY's context, the process's context (core's door), the
// person the update comes from (once the gate named them) and the update's own request id (the
// audit rows of its changes carry it).
import type { Context } from 'grammy';
import type { BotUser } from '../core/bot/links.ts';
import { actOnUpdateOnce } from '../core/bot/updates.ts';
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

/**
 * Runs `effect` in one transaction with the update recorded as acted on
 * (docs/reference/bot.md#running-the-bot), so a redelivered update does nothing. Returns null when
 * the update was acted on before. The transaction is core's (actOnUpdateOnce, core/bot/updates.ts).
 */
export function actOnce<T>(
  c: BotContext,
  kind: string,
  effect: (tx: Queryable) => Promise<T>,
): Promise<T | null> {
  return actOnUpdateOnce(c.app.db, c.app.clock, { id: c.update.update_id, kind }, effect);
}
