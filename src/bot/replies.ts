// How a reply reads (docs/reference/bot.md#replies): plain text, one `label: value` line per number, the mode
// first on every reply about money, stock or a redeem, codes masked, money with 2 to 6 decimals,
// and one line (with an example) for a bad input. Nothing here ever holds a full code.

import type { RedeemSummary } from '../core/bot/redeems.ts';
import { codeLast4, maskCode } from '../core/crypto/code-crypto.ts';
import type { Mode } from '../core/vocabulary.ts';

/** `[live]` or `[test]`: the first line of a reply about money, stock or a redeem. */
export const modeTag = (mode: Mode) => `[${mode}]`;

/** Money as the chat writes it: 2 to 6 decimals (`12.50`, `0.0035`). */
export { usdText } from '../core/money.ts';

/** A code as a reply may show it: every character but the last 4 replaced by `*`. */
export const maskedCode = (code: string) => maskCode(codeLast4(code), code.length);

/**
 * Masked codes told apart: a code whose masked form another one shares (`****-660` twice) gets
 * its position in front (`2. ****-660`); the others are shown as they are.
 */
export function toldApart(masked: readonly string[]): string[] {
  const seen = new Map<string, number>();
  for (const m of masked) seen.set(m, (seen.get(m) ?? 0) + 1);
  return masked.map((m, i) => ((seen.get(m) ?? 0) > 1 ? `${i + 1}. ${m}` : m));
}

/** Lines `label: value`, in order. */
export const labelled = (pairs: readonly (readonly [string, string | number])[]) =>
  pairs.map(([label, value]) => `${label}: ${value}`).join('\n');

/** A reply about money, stock or a redeem: the mode line, then the rest. */
export const inMode = (mode: Mode, ...parts: string[]) =>
  [modeTag(mode), ...parts.filter(Boolean)].join('\n');

/** One line naming what is wrong, then one example of the right form. */
export const badInput = (what: string, example: string) => `${what}. Example: ${example}`;

export const NOT_LINKED =
  'This chat is not linked to an account. Ask your operator for a link and open it (or send /start <token>).';

/** An invoice's start_parameter: a forwarded invoice's link opens the bot with `/start topup`. */
export const TOPUP_START_PARAMETER = 'topup';

export const SLOW_DOWN = 'Too many messages: please slow down and try again in a few seconds.';

const COMMANDS: Record<string, string> = {
  '/help': 'this list',
  '/mode live|test': 'the mode the bot acts in',
  '/account': 'plan, quota, balance and subscription',
  '/stock': 'your stock per category',
  '/addstock <category> <codes…>': 'add codes (or send a .txt/.csv file with this caption)',
  '/check <codes…>': 'check codes without redeeming them',
  '/redeem <player_id> <codes…> | uc=<n> | packs=<cat>x<n>': 'redeem by hand',
  '/wallet': 'balance, last entries and pending top-ups (owner)',
  '/topup <usd>': 'top up the wallet (owner)',
  '/alerts [balance <usd>|off]': 'low balance, subscription, stock and webhook alerts (owner)',
  '/cancel': 'void your confirmations still waiting (a redeem, a top-up)',
};
const OWNER_ONLY = new Set(['/wallet', '/topup <usd>', '/alerts [balance <usd>|off]']);

/** The commands of a role (or of someone not linked: null) as Telegram's command menu lists them. */
export function commandMenu(role: 'owner' | 'staff' | null): { command: string; description: string }[] {
  if (role === null)
    return [
      { command: 'start', description: 'link this chat with the token your operator gave you' },
      { command: 'help', description: 'what this bot does' },
    ];
  return Object.entries(COMMANDS)
    .filter(([cmd]) => role === 'owner' || !OWNER_ONLY.has(cmd))
    .map(([cmd, what]) => ({ command: cmd.slice(1).split(' ')[0]!, description: what.slice(0, 256) }));
}

/** The commands of a role, one per line. */
export function helpText(role: 'owner' | 'staff'): string {
  return Object.entries(COMMANDS)
    .filter(([cmd]) => role === 'owner' || !OWNER_ONLY.has(cmd))
    .map(([cmd, what]) => `${cmd} — ${what}`)
    .join('\n');
}

/** What a guard answers someone who is not an owner (bot/guards.ts ownerOnly). */
export const OWNERS_ONLY = 'Only an owner of the account can do this; ask one.';

export const HELP_LINE = 'Unknown command. Send /help for the list of commands.';

/** A manual redeem as its confirmation and its progress show it (bot/commands/redeem.ts, bot/progress.ts). */
export function summaryLines(s: RedeemSummary): string {
  const pairs: [string, string | number][] = [
    ['player_id', s.player_id],
    ['codes', s.codes],
    ['source', s.source],
  ];
  if (s.uc !== null) pairs.push(['uc', s.uc]);
  return labelled(pairs);
}
