// The bot's shared guards, as grammY middleware: what stands between an admitted update (gate.ts)
// and a feature's handler. `linked` runs once for every update, before every feature
// (bot/index.ts); `ownerOnly` stands in front of an owner's command inside its feature
// (`feature.command('wallet', ownerOnly, wallet)`). A guard that refuses answers in the update's
// own acted-on-once transaction and does not call next.
import type { NextFunction } from 'grammy';
import { touchBotUser } from '../core/bot/links.ts';
import { newRequestId } from '../core/ids.ts';
import type { ServerContext } from '../http/context.ts';
import { actOnce, type BotContext, personOf } from './context.ts';
import { isPayment, updateKind } from './gate.ts';
import { NOT_LINKED, OWNERS_ONLY } from './replies.ts';

const PEOPLE_REMEMBERED = 10_000;

/**
 * The first guard of every update's turn (registered once, before every feature): names the
 * person; an unlinked one (or a disabled customer's) is told so and goes no further. `/start
 * <token>` and payments pass unlinked (core/bot/topups.ts judges a payment itself).
 */
export function linked(app: ServerContext) {
  // The customer each person was bound to when last seen by this process: the next update's
  // touch names it, so on Citus it runs on that customer's worker alone (touchBotUser). The
  // oldest go first past PEOPLE_REMEMBERED; a person forgotten is looked up again.
  const customerOf = new Map<number, number>();
  return async (c: BotContext, next: NextFunction) => {
    c.app = app;
    c.person = null;
    c.requestId = newRequestId();
    const kind = updateKind(c.update);
    const metrics = app.metrics.bot;
    if (!c.from) return;
    const payment = isPayment(c.update);
    c.person = await touchBotUser(app.db, c.from.id, app.clock.now(), customerOf.get(c.from.id));
    customerOf.delete(c.from.id);
    if (c.person) customerOf.set(c.from.id, c.person.customerId);
    if (customerOf.size > PEOPLE_REMEMBERED) customerOf.delete(customerOf.keys().next().value!);
    const startWithToken = c.message?.text !== undefined && /^\/start(@\w+)?\s+\S/.test(c.message.text);
    if ((!c.person || c.person.customerDisabled) && !startWithToken && !payment) {
      c.person = null;
      metrics.update(kind, 'acted');
      if (kind === 'callback_query') await c.answerCallbackQuery().catch(() => undefined);
      if ((await actOnce(c, 'unlinked', async () => true)) !== null) await c.reply(NOT_LINKED);
      return;
    }
    metrics.update(kind, 'acted');
    await next();
  };
}

/** Lets an owner through to the handler after it; anyone else gets one line. */
export async function ownerOnly(c: BotContext, next: NextFunction): Promise<void> {
  if (personOf(c).role === 'owner') return next();
  if ((await actOnce(c, 'owner_only', async () => true)) !== null) await c.reply(OWNERS_ONLY);
}
