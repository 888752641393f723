// /alerts (docs/reference/bot.md#alerts), owners only: shows the owner's alert settings, sets the live balance
// threshold, or stops and restarts every alert for this owner. The alerts themselves are sent by
// the loop in bot/index.ts (core/bot/alerts.ts decides them).
import { Composer } from 'grammy';
import { setAlertSettings } from '../../core/bot/alerts.ts';
import { parseUsd } from '../../core/money.ts';
import { actOnce, type BotContext, personOf } from '../context.ts';
import { ownerOnly } from '../guards.ts';
import { badInput, labelled, usdText } from '../replies.ts';

const EXAMPLE = '/alerts balance 5, /alerts balance off, /alerts off or /alerts on';

/** /alerts, owners only. */
export const alertsFeature = new Composer<BotContext>();
alertsFeature.command('alerts', ownerOnly, alerts);

async function alerts(c: BotContext & { match: string }) {
  const person = personOf(c);
  const [what = '', value = ''] = c.match.trim().toLowerCase().split(/\s+/);
  let change: { thresholdMicros?: number | null; off?: boolean } = {};
  if (what === 'off') change = { off: true };
  else if (what === 'on') change = { off: false };
  else if (what === 'balance' && value === 'off') change = { thresholdMicros: null };
  else if (what === 'balance') {
    const micros = parseUsd(value);
    if (micros === null || micros === 0) {
      if ((await actOnce(c, 'alerts', async () => true)) !== null)
        await c.reply(badInput('the threshold must be an amount in USD above 0', '/alerts balance 5'));
      return;
    }
    change = { thresholdMicros: micros };
  } else if (what !== '') {
    if ((await actOnce(c, 'alerts', async () => true)) !== null)
      await c.reply(badInput(`unknown setting "${what.slice(0, 20)}"`, EXAMPLE));
    return;
  }
  const settings = await actOnce(c, 'alerts', (tx) => setAlertSettings(tx, person, change));
  if (!settings) return;
  await c.reply(
    [
      '[live]',
      labelled([
        ['alerts', settings.off ? 'off' : 'on'],
        ['balance_below_usd', settings.thresholdMicros === null ? 'off' : usdText(settings.thresholdMicros)],
        ['subscription', 'expiring within 3 days, and expired'],
        ['stock', 'a category at 0 available'],
        ['webhooks', 'an event that ended failed'],
      ]),
      `Change with ${EXAMPLE}.`,
    ].join('\n'),
  );
}
