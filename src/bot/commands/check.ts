// /check <codes> (docs/reference/bot.md#commands): the checker. Asks the mode's activator what it knows of each
// code without activating it; nothing is billed or counted in the quota. At most
// BOT_CHECKS_PER_DAY codes per customer and UTC day, counted in the update's own transaction.
import { Composer } from 'grammy';
import type { CodeCheckState } from '../../core/activator.ts';
import { takeChecks } from '../../core/bot/check-usage.ts';
import { utcDay } from '../../core/clock.ts';
import { CODE_FORMAT } from '../../core/redeem/request.ts';
import { actOnce, type BotContext, personOf } from '../context.ts';
import { badInput, inMode, maskedCode, toldApart } from '../replies.ts';
import { codesInText } from './addstock.ts';

export const MAX_CHECK_CODES = 50;
const EXAMPLE = '/check CODE1 CODE2';

/** /check. */
export const checkFeature = new Composer<BotContext>();
checkFeature.command('check', async (c) => {
  const person = personOf(c);
  const codes = codesInText(c.match).map((x) => x.code);
  const refuse = async (line: string) => {
    if ((await actOnce(c, 'check', async () => true)) !== null) await c.reply(line);
  };
  if (codes.length === 0) return refuse(badInput('no codes given', EXAMPLE));
  if (codes.length > MAX_CHECK_CODES)
    return refuse(badInput(`at most ${MAX_CHECK_CODES} codes per check (got ${codes.length})`, EXAMPLE));
  const malformed = codes.findIndex((code) => !CODE_FORMAT.test(code));
  if (malformed >= 0)
    return refuse(
      badInput(`code ${malformed + 1} is not a code (4 to 64 letters, digits or dashes)`, EXAMPLE),
    );
  const now = c.app.clock.now();
  const cap = c.app.config.BOT_CHECKS_PER_DAY;
  const taken = await actOnce(c, 'check', (tx) =>
    takeChecks(tx, { customerId: person.customerId, day: utcDay(now), n: codes.length, cap }),
  );
  if (!taken) return;
  if (!taken.ok) {
    const left = Math.max(0, cap - taken.used);
    const resets = new Date(`${utcDay(now)}T00:00:00Z`).getTime() + 86_400_000;
    await c.reply(
      `Daily check limit reached: ${cap} codes per day, ${left} left today. The count resets at ${new Date(resets).toISOString().replace('.000Z', 'Z')}.`,
    );
    return;
  }
  const activator = c.app.activatorFor(person.mode);
  const states: CodeCheckState[] = [];
  for (const code of codes) {
    states.push(
      await activator
        .check({ mode: person.mode, code, customerId: person.customerId })
        .catch(() => 'unknown' as const),
    );
  }
  const shown = toldApart(codes.map(maskedCode));
  await c.reply(inMode(person.mode, shown.map((code, i) => `${code} ${states[i]}`).join('\n')));
});
