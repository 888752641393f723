// A test app with the chat bot on, talking to the project's stand-in for the Bot API
// (src/dev/bot-api-sim.ts) over real HTTP, and helpers that act as a person in the chat.
import { type RunningBot, startBot } from '../../src/bot/index.ts';
import type { ManualClock } from '../../src/core/clock.ts';
import { type BotApiSim, type SimMessage, type SimUser, startBotApiSim } from '../../src/dev/bot-api-sim.ts';
import { adminCall, createTestApp, type TestApp } from './app.ts';

export interface BotTestApp extends TestApp {
  sim: BotApiSim;
  bot: RunningBot;
}

let nextUserId = 70_000_000 + Math.floor(Math.random() * 1_000_000);
/** A new Telegram user (a private chat of its own). */
export const person = (name = 'shop'): SimUser => ({
  id: nextUserId++,
  username: `${name}${nextUserId}`,
  first_name: name,
});

export async function createBotTestApp(
  opts: { env?: Record<string, string>; clock?: ManualClock; jobWorker?: boolean } = {},
): Promise<BotTestApp> {
  const sim = await startBotApiSim();
  const t = await createTestApp({
    ...opts,
    env: { BOT_TOKEN: sim.token, BOT_API_ROOT: sim.url, ...opts.env },
  });
  const bot = (await startBot(t.ctx))!;
  t.ctx.bot = bot.door;
  return {
    ...t,
    sim,
    bot,
    async close() {
      await bot.stop();
      await t.close();
      await sim.close();
    },
  };
}

/** The bot's messages in the person's chat. */
export const botMessages = (t: BotTestApp, who: SimUser) => t.sim.botMessages(who.id);

/**
 * Sends `text` as the person and waits for the bot's next new message in the chat; returns it.
 * Moves the manual clock half a second, as a person types (the per-person limit counts in it).
 */
export async function say(
  t: BotTestApp,
  who: SimUser,
  text: string,
  timeoutMs = 10_000,
): Promise<SimMessage> {
  const before = botMessages(t, who).length;
  t.clock.advance(500);
  await t.sim.sendText(who, text);
  return t.sim.waitFor(() => botMessages(t, who)[before], timeoutMs);
}

/**
 * Sends the texts as the person all at once (one getUpdates batch), dated by the test's manual
 * clock, since the bot counts a message at its `date`; answers the stand-in's ids. Nothing is
 * awaited: the test waits for what it expects (waitFor, actedOn).
 */
export function burst(t: BotTestApp, who: SimUser, texts: string[]) {
  return t.sim.burst(who, texts, { date: Math.floor(t.clock.now().getTime() / 1000) });
}

/** Waits until the update is acted on (its row in bot_updates), for updates that get no new message. */
export async function actedOn(t: BotTestApp, updateId: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await t.ctx.db.query('select 1 from bot_updates where update_id = $1', [updateId]);
    if (r.rows.length > 0) return;
    if (Date.now() > deadline) throw new Error(`update ${updateId} was not acted on in ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Links a new person to the customer with the role, through a link the operator issued. */
export async function linkPerson(
  t: BotTestApp,
  customerId: number,
  role: 'owner' | 'staff' = 'owner',
  who: SimUser = person(role),
): Promise<SimUser> {
  const link = await adminCall<{ token: string }>(
    t,
    'POST',
    `/admin/v1/customers/${customerId}/bot-links`,
    { role },
    201,
  );
  const reply = await say(t, who, `/start ${link.token}`);
  if (!reply.text?.startsWith('Linked to')) throw new Error(`linking failed: ${reply.text}`);
  return who;
}

/** The `label: value` lines of a reply, as a record. */
export function fields(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of (text ?? '').split('\n')) {
    const m = /^([a-z_]+): (.*)$/.exec(line);
    if (m) out[m[1]!] = m[2]!;
  }
  return out;
}
