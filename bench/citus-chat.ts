// The chat in the mixed load of bench:citus (--parts=mixed; docs/running/citus.md#two-phase-commits):
// each customer's owner linked through the bot, which talks to the project's stand-in for the Bot
// API (src/dev/bot-api-sim.ts), then owners' commands at random while the API load runs: their
// account, stock and wallet, a code check, and a redeem confirmed with its button and reported to
// its end. Each person is in one conversation at a time, and each action waits for the bot's reply.
import { randomBytes } from 'node:crypto';
import type { BotApiSim, SimMessage, SimUser } from '../src/dev/bot-api-sim.ts';

export interface ChatOwner {
  customerId: number;
  person: SimUser;
}

/** How long a person waits for the bot's reply, or a redeem's end, before counting it as failed. */
const REPLY_MS = 30_000;
const PLAYER = '5123456789';

/** The bot's messages that answer the person (an alert comes by itself, between any two). */
const replies = (sim: BotApiSim, who: SimUser) =>
  sim.botMessages(who.id).filter((m) => !m.text?.includes('\nAlert: '));

/** The bot's next reply to the person after they say `text`. */
async function say(sim: BotApiSim, who: SimUser, text: string): Promise<SimMessage> {
  const before = replies(sim, who).length;
  await sim.sendText(who, text);
  return sim.waitFor(() => replies(sim, who)[before], REPLY_MS);
}

async function adminPost(adminUrl: string, adminToken: string, path: string, body: unknown) {
  const res = await fetch(`${adminUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== 201 && res.status !== 200) throw new Error(`POST ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/**
 * Links an owner to each customer (a bot link made through the admin API, `/start TOKEN` in the
 * chat) and switches them to test mode, as the fixtures' keys are test keys.
 */
export async function linkOwners(o: {
  adminUrl: string;
  adminToken: string;
  sim: BotApiSim;
  customerIds: number[];
}): Promise<ChatOwner[]> {
  const owners: ChatOwner[] = [];
  let next = 0;
  const worker = async () => {
    while (next < o.customerIds.length) {
      const customerId = o.customerIds[next++]!;
      const person: SimUser = {
        id: 7_000_000 + customerId,
        username: `owner${customerId}`,
        first_name: 'owner',
      };
      const link = await adminPost(o.adminUrl, o.adminToken, `/admin/v1/customers/${customerId}/bot-links`, {
        role: 'owner',
      });
      const linked = await say(o.sim, person, `/start ${String(link['token'])}`);
      if (!/^Linked to/.test(linked.text ?? '')) throw new Error(`owner of ${customerId}: ${linked.text}`);
      const mode = await say(o.sim, person, '/mode test');
      if (!mode.text?.includes('[test]')) throw new Error(`owner of ${customerId}: /mode test: ${mode.text}`);
      owners.push({ customerId, person });
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  return owners;
}

type ChatKind = 'chat /account' | 'chat /stock' | 'chat /wallet' | 'chat /check' | 'chat /redeem';
const CHAT_KINDS: ChatKind[] = [
  'chat /account',
  'chat /stock',
  'chat /wallet',
  'chat /check',
  'chat /redeem',
];

/** One action of an owner's; true when the bot answered as it should. */
async function act(sim: BotApiSim, who: SimUser, kind: ChatKind): Promise<boolean> {
  const code = () => `CHAT${randomBytes(6).toString('hex').toUpperCase()}-60`;
  switch (kind) {
    case 'chat /account':
      return (await say(sim, who, '/account')).text?.includes('customer:') ?? false;
    case 'chat /stock':
      return (await say(sim, who, '/stock')).text !== undefined;
    case 'chat /wallet':
      return (await say(sim, who, '/wallet')).text?.includes('balance_usd') ?? false;
    case 'chat /check':
      return /valid/.test((await say(sim, who, `/check ${code()}`)).text ?? '');
    case 'chat /redeem': {
      const ask = await say(sim, who, `/redeem ${PLAYER} ${code()}`);
      const keyboard = (ask.reply_markup as { inline_keyboard?: { text: string; callback_data: string }[][] })
        ?.inline_keyboard;
      const button = keyboard?.[0]?.find((b) => b.text === 'Redeem');
      if (!button) return false;
      await sim.press(who, ask, button.callback_data);
      const ended = await sim.waitFor(
        () =>
          sim
            .botMessages(who.id)
            .find((x) => x.message_id === ask.message_id && x.text?.includes('activated:'))?.text,
        REPLY_MS,
      );
      return /activated: 1/.test(ended);
    }
  }
}

/**
 * Owners' actions until the deadline, one owner per conversation at a time (`free` is shared by
 * every chat client); each answer counted in `answers` as "chat /account ok" (or "failed").
 */
export async function chatClient(o: {
  sim: BotApiSim;
  free: ChatOwner[];
  deadline: number;
  answers: Map<string, number>;
}): Promise<void> {
  while (Date.now() < o.deadline) {
    const owner = o.free.splice(Math.floor(Math.random() * o.free.length), 1)[0];
    if (!owner) return;
    const kind = CHAT_KINDS[Math.floor(Math.random() * CHAT_KINDS.length)]!;
    const ok = await act(o.sim, owner.person, kind).catch(() => false);
    o.free.push(owner);
    const label = `${kind} ${ok ? 'ok' : 'failed'}`;
    o.answers.set(label, (o.answers.get(label) ?? 0) + 1);
  }
}
