// The chat bot across real processes (docs/reference/bot.md#running-the-bot, docs/reference/bot.md#commands): a bot redeem whose process is killed
// with SIGKILL between the press and its end finishes as an API job does (interrupted, unattempted
// stock returned, nothing billed, nothing run twice) and the chat is told; two processes on one
// PostgreSQL poll one at a time and the survivor takes over; webhook mode end to end. The Bot API
// is the project's stand-in, in this test process, over real HTTP on 127.0.0.1.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { type BotApiSim, type SimMessage, type SimUser, startBotApiSim } from '../../src/dev/bot-api-sim.ts';
import {
  adminHttp,
  createProcessMerchant,
  freePort,
  type ServerProcess,
  serverProcesses,
  waitUntil,
} from '../helpers/process.ts';

const processes = serverProcesses();
let sim: BotApiSim;
beforeAll(async () => {
  sim = await startBotApiSim();
});
afterAll(async () => {
  await sim?.close();
});

let nextUser = 81_000_000 + Math.floor(Math.random() * 1_000_000);
const person = (): SimUser => ({ id: nextUser++, username: `p${nextUser}`, first_name: 'p' });
const botEnv = (extra: Record<string, string> = {}) => ({
  BOT_TOKEN: sim.token,
  BOT_API_ROOT: sim.url,
  LOG_LEVEL: 'info',
  ...extra,
});

/** Sends text and waits for the bot's next message in that chat. */
async function say(who: SimUser, text: string, timeoutMs = 20_000): Promise<SimMessage> {
  const before = sim.botMessages(who.id).length;
  await sim.sendText(who, text);
  return sim.waitFor(() => sim.botMessages(who.id)[before], timeoutMs);
}

async function link(server: ServerProcess, customerId: number, who: SimUser) {
  const { token } = await adminHttp<{ token: string }>(
    server,
    'POST',
    `/admin/v1/customers/${customerId}/bot-links`,
    {
      role: 'owner',
    },
  );
  expect((await say(who, `/start ${token}`)).text).toMatch(/^Linked to/);
}

test('SIGKILL between the press and the end: interrupted, unattempted stock back, the chat told, nothing twice', {
  timeout: 180_000,
}, async () => {
  const dataDir = processes.dataDir();
  const first = await processes.start(dataDir, botEnv());
  const m = await createProcessMerchant(first);
  const who = person();
  await link(first, m.customerId, who);
  expect((await say(who, '/mode test')).text).toContain('[test]');
  const tag = Date.now().toString(36).toUpperCase();
  const codes = Array.from({ length: 8 }, (_, i) => `SLOW-${tag}-${i}`);
  await adminHttp(first, 'POST', `/admin/v1/customers/${m.customerId}/stock`, {
    mode: 'test',
    category: '60',
    codes,
  });
  const headers = { authorization: `Bearer ${m.key}` };
  const me = async (s: ServerProcess) =>
    (await (await fetch(`${s.url}/v1/me`, { headers })).json()) as {
      quota: { used_today: number };
      balance_usd: number;
    };
  const before = await me(first);

  const confirm = await say(who, '/redeem 5123456789 packs=60x8');
  const data = (confirm.reply_markup as { inline_keyboard: { text: string; callback_data: string }[][] })
    .inline_keyboard[0]![0]!;
  expect(data.text).toBe('Redeem');
  const press = await sim.press(who, confirm, data.callback_data);
  // Five slow codes go out at once (2 s each): kill while they are out.
  await sim.waitFor(() => confirm.text?.includes('Redeem started') && confirm, 15_000);
  await new Promise((r) => setTimeout(r, 800));
  await first.kill('SIGKILL');

  const second = await processes.start(dataDir, botEnv());
  const end = await sim.waitFor(
    () => (confirm.text?.includes('interrupted') ? confirm.text : undefined),
    90_000,
  );
  expect(end.split('\n')[0]).toBe('[test]');
  expect(end).toMatch(/failed quarantined/);
  expect(end).toMatch(/not_attempted: 3/);
  const jobId = /job_\w+/.exec(end)![0];
  const job = (await (await fetch(`${second.url}/v1/jobs/${jobId}`, { headers })).json()) as Record<
    string,
    unknown
  >;
  expect(job).toMatchObject({
    status: 'interrupted',
    channel: 'bot',
    error: { error_code: 'job_interrupted' },
  });
  const stock = (await (await fetch(`${second.url}/v1/stock`, { headers })).json()) as {
    total_available: number;
  };
  expect(stock.total_available).toBe(3);
  const after = await me(second);
  expect(after.quota.used_today).toBe(before.quota.used_today);
  expect(after.balance_usd).toBe(before.balance_usd);
  // The press redelivered after the restart runs nothing: still one job.
  sim.redeliver(press.updateId);
  await say(who, '/help');
  const jobs = await adminHttp<{ jobs: unknown[] }>(
    second,
    'GET',
    `/admin/v1/jobs?customer_id=${m.customerId}`,
  );
  expect(jobs.jobs).toHaveLength(1);
  // The chat was told once.
  expect(sim.botMessages(who.id).filter((x) => x.text?.includes('interrupted'))).toHaveLength(1);
  await second.kill('SIGTERM');
});

test('two processes on one PostgreSQL poll one at a time; kill the poller and the other takes over within 30 s', {
  timeout: 120_000,
  skip: !process.env.DATABASE_URL,
}, async () => {
  const a = await processes.start(processes.dataDir(), botEnv());
  const b = await processes.start(processes.dataDir(), botEnv());
  const m = await createProcessMerchant(a);
  const who = person();
  await link(a, m.customerId, who);
  const polls = (s: ServerProcess) => s.output().includes('bot: polling for updates');
  const poller = await waitUntil('a poller', () => (polls(a) ? a : polls(b) ? b : undefined));
  const other = poller === a ? b : a;
  expect(polls(other)).toBe(false);
  await poller.kill('SIGKILL');
  const killedAt = Date.now();
  const reply = await say(who, '/help', 40_000);
  expect(reply.text).toContain('Commands:');
  expect(Date.now() - killedAt).toBeLessThan(30_000);
  expect(polls(other)).toBe(true);
});

test('webhook mode: registered at start with its secret; updates without the secret are refused', {
  timeout: 90_000,
}, async () => {
  const hook = await startBotApiSim();
  try {
    const port = await freePort();
    const secret = 'webhook-secret-0123456789abcdef';
    const server = await processes.start(processes.dataDir(), {
      BOT_TOKEN: hook.token,
      BOT_API_ROOT: hook.url,
      BOT_UPDATES: 'webhook',
      BOT_WEBHOOK_SECRET: secret,
      BOT_WEBHOOK_URL: `http://127.0.0.1:${port}/bot/updates`,
      PORT: String(port),
    });
    expect(hook.webhook()).toEqual({ url: `http://127.0.0.1:${port}/bot/updates`, secret });
    const update = {
      update_id: 1,
      message: {
        message_id: 1,
        date: 1,
        chat: { id: 5, type: 'private' },
        from: { id: 5, is_bot: false, first_name: 'x' },
        text: '/help',
      },
    };
    for (const given of [undefined, 'wrong-secret-0123456789abcdef']) {
      const res = await fetch(`${server.url}/bot/updates`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(given ? { 'x-telegram-bot-api-secret-token': given } : {}),
        },
        body: JSON.stringify(update),
      });
      expect(res.status).toBe(401);
      expect(await res.json()).toMatchObject({ ok: false, error_code: 'unauthorized' });
    }
    // Through the stand-in's own webhook delivery: a person is linked and answered.
    const m = await createProcessMerchant(server);
    const who = person();
    const { token } = await adminHttp<{ token: string }>(
      server,
      'POST',
      `/admin/v1/customers/${m.customerId}/bot-links`,
      {
        role: 'staff',
      },
    );
    await hook.sendText(who, `/start ${token}`);
    const linked = await hook.waitFor(() => hook.botMessages(who.id)[0], 20_000);
    expect(linked.text).toMatch(/as staff/);
    const status = await adminHttp<Record<string, unknown>>(server, 'GET', '/admin/v1/bot');
    expect(status).toMatchObject({ enabled: true, updates: 'webhook', username: hook.bot.username });
    expect(status.linked_users).toBeGreaterThanOrEqual(1);
    await server.kill('SIGTERM');
  } finally {
    await hook.close();
  }
});
