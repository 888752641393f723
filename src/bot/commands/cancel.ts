// /cancel: voids the person's confirmations still waiting (a manual redeem's buttons, a top-up
// request or invoice), in the update's own transaction. A press or payment that comes after
// runs nothing and says so.
import type { Bot } from 'grammy';
import { cancelConfirmations } from '../../core/bot/redeems.ts';
import { actOnce, type BotContext, personOf } from '../context.ts';

export function registerCancel(bot: Bot<BotContext>) {
  bot.command('cancel', async (c) => {
    const person = personOf(c);
    const now = c.app.clock.now();
    const voided = await actOnce(c, 'cancel', async (tx) => ({
      redeems: await cancelConfirmations(tx, person.telegramUserId, now),
    }));
    if (!voided) return;
    await c.reply(
      voided.redeems === 0
        ? 'Nothing was waiting for you: nothing to cancel.'
        : `Cancelled: ${voided.redeems} redeem confirmation(s). Their buttons do nothing now.`,
    );
  });
}
