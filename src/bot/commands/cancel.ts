// /cancel: voids the person's confirmations still waiting (a manual redeem's buttons, a top-up
// request or invoice), in the update's own transaction. A press or payment that comes after
// runs nothing and says so.
import type { Bot } from 'grammy';
import { cancelConfirmations } from '../../core/bot/redeems.ts';
import { cancelPendingTopups } from '../../core/bot/topups.ts';
import { actOnce, type BotContext, personOf } from '../context.ts';

export function registerCancel(bot: Bot<BotContext>) {
  bot.command('cancel', async (c) => {
    const person = personOf(c);
    const now = c.app.clock.now();
    const voided = await actOnce(c, 'cancel', async (tx) => ({
      redeems: await cancelConfirmations(tx, person.telegramUserId, now),
      topups: (
        await cancelPendingTopups(tx, {
          telegramUserId: person.telegramUserId,
          customerId: person.customerId,
          now,
        })
      ).length,
    }));
    if (!voided) return;
    const parts = [
      voided.redeems > 0 ? `${voided.redeems} redeem confirmation(s)` : '',
      voided.topups > 0 ? `${voided.topups} top-up request(s)` : '',
    ].filter(Boolean);
    await c.reply(
      parts.length === 0
        ? 'Nothing was waiting for you: nothing to cancel.'
        : `Cancelled: ${parts.join(' and ')}. Their buttons and invoices do nothing now.`,
    );
  });
}
