// /cancel: voids the person's confirmations still waiting (a manual redeem's buttons, a top-up
// request or invoice), in the update's own transaction. A press or payment that comes after
// runs nothing and says so.
import { Composer } from 'grammy';
import { cancelWaiting } from '../../core/bot/redeems.ts';
import { actOnce, type BotContext, personOf } from '../context.ts';

/** /cancel. */
export const cancelFeature = new Composer<BotContext>();
cancelFeature.command('cancel', async (c) => {
  const person = personOf(c);
  const now = c.app.clock.now();
  const voided = await actOnce(c, 'cancel', (tx) =>
    cancelWaiting(tx, { telegramUserId: person.telegramUserId, customerId: person.customerId, now }),
  );
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
