// /start, /help, /mode, /account and /stock (docs/reference/bot.md#links-and-roles, docs/reference/bot.md#commands): who the person is, the mode
// they act in, and the same numbers GET /v1/me and GET /v1/stock answer a key of that mode.
import { Composer } from 'grammy';
import { accountView, loadAccountState, today } from '../../core/accounts/accounts.ts';
import { bindWithToken, setBotUserMode } from '../../core/bot/links.ts';
import { stockSummary } from '../../core/stock/stock.ts';
import { setChatMenu } from '../command-menu.ts';
import { actOnce, type BotContext, personOf } from '../context.ts';
import {
  badInput,
  helpText,
  inMode,
  labelled,
  NOT_LINKED,
  TOPUP_START_PARAMETER,
  usdText,
} from '../replies.ts';

const BIND_REFUSALS = {
  unknown: 'This link is not valid. Ask your operator for a new one.',
  used: 'This link was used already. Ask your operator for a new one.',
  expired: 'This link has expired (links last 24 hours). Ask your operator for a new one.',
  other_customer:
    'This Telegram account is linked to another customer already; ask your operator to unlink it first.',
  disabled: 'This account is disabled. Ask your operator.',
} as const;

/** /start, /help, /mode, /account and /stock. */
export const accountFeature = new Composer<BotContext>();
accountFeature.command('start', start);
accountFeature.command('help', help);
accountFeature.command('mode', mode);
accountFeature.command('account', account);
accountFeature.command('stock', stock);

/** `/start <token>` binds the person; `/start` alone (linked) is /help. */
async function start(c: BotContext & { match: string }) {
  const token = c.match.trim();
  // `/start topup` is what a forwarded invoice's link sends (its start_parameter): not a link token.
  if (token === TOPUP_START_PARAMETER) {
    if (c.person) return help(c);
    if ((await actOnce(c, 'start', async () => true)) !== null) await c.reply(NOT_LINKED);
    return;
  }
  if (!token) return help(c);
  const from = c.from!;
  const bound = await actOnce(c, 'start', (tx) =>
    bindWithToken(tx, c.app.clock, {
      token,
      telegramUserId: from.id,
      chatId: c.chat!.id,
      username: from.username ?? null,
      requestId: c.requestId,
    }),
  );
  if (!bound) return;
  if (bound.kind !== 'bound') {
    await c.reply(BIND_REFUSALS[bound.kind]);
    return;
  }
  await c.reply(`Linked to ${bound.customerName} as ${bound.role}.\n\nCommands:\n${helpText(bound.role)}`);
  await setChatMenu(c.app, c.api, c.chat!.id, bound.role);
}

async function mode(c: BotContext & { match: string }) {
  const person = personOf(c);
  const mode = c.match.trim().toLowerCase();
  if (mode !== 'live' && mode !== 'test') {
    if ((await actOnce(c, 'mode', async () => true)) !== null)
      await c.reply(badInput(`mode must be live or test (now: ${person.mode})`, '/mode test'));
    return;
  }
  if ((await actOnce(c, 'mode', (tx) => setBotUserMode(tx, person, mode))) === null) return;
  await c.reply(
    inMode(
      mode,
      mode === 'test'
        ? 'The bot now acts in test mode: the sandbox, the test wallet and the test stock.'
        : 'The bot now acts in live mode.',
    ),
  );
}

async function account(c: BotContext) {
  const person = personOf(c);
  const now = c.app.clock.now();
  const state = await actOnce(c, 'account', (tx) =>
    loadAccountState(tx, person.customerId, person.mode, today(c.app.clock)),
  );
  if (!state) return;
  const view = accountView(state, now);
  const sub = view.subscription;
  const subscription = !sub.required
    ? 'free'
    : sub.expires_at === null
      ? 'active'
      : sub.active
        ? `active until ${sub.expires_at.slice(0, 10)} (${sub.days_left} days)`
        : `expired ${sub.expires_at.slice(0, 10)}`;
  await c.reply(
    inMode(
      person.mode,
      labelled([
        ['customer', person.customerName],
        ['plan', view.plan ?? 'none'],
        ['plan_active', String(view.plan_active)],
        ['daily_limit', view.quota.daily_limit ?? 'none'],
        ['used_today', view.quota.used_today],
        ['remaining_today', view.quota.remaining_today],
        ['balance_usd', usdText(state.balanceMicros - state.heldMicros)],
        ['subscription', subscription],
      ]),
    ),
  );
}

async function stock(c: BotContext) {
  const person = personOf(c);
  const summary = await actOnce(c, 'stock', (tx) => stockSummary(tx, person.customerId, person.mode));
  if (!summary) return;
  const lines = summary.categories.map((cat) => {
    let line = `${cat.category}: ${cat.available}`;
    if (cat.reserved) line += ` reserved ${cat.reserved}`;
    if (cat.quarantined) line += ` quarantined ${cat.quarantined}`;
    return line;
  });
  await c.reply(
    inMode(
      person.mode,
      lines.join('\n'),
      labelled([
        ['total_available', summary.total_available],
        ['total_uc_available', summary.total_uc_available],
      ]),
    ),
  );
}

async function help(c: BotContext) {
  const person = personOf(c);
  if ((await actOnce(c, 'help', async () => true)) === null) return;
  await c.reply(
    `${person.customerName} (${person.role}, ${person.mode} mode)\n\nCommands:\n${helpText(person.role)}`,
  );
}
