// `redeem-gateway bot-sim` as a person runs it: the real command as a child process, lines typed
// into its stdin (no terminal), and this test playing the service's bot with grammY's client
// against the root and token the command printed. The printed chat is asserted line by line.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Api } from 'grammy';
import type { Update } from 'grammy/types';
import { afterAll, expect, test } from 'vitest';

const BIN = join(import.meta.dirname, '..', 'bin', 'redeem-gateway.js');
const dir = mkdtempSync(join(tmpdir(), 'rg-bot-sim-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function start(args: string[]) {
  const child = spawn(process.execPath, [BIN, 'bot-sim', ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH ?? '' },
  }) as ChildProcessWithoutNullStreams;
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => {
    out += String(d);
  });
  child.stderr.on('data', (d) => {
    err += String(d);
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  /** Resolves with the output once it matches (from `from` on), or fails showing what it holds. */
  async function output(re: RegExp, from = 0, timeoutMs = 15_000): Promise<RegExpExecArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = re.exec(out.slice(from));
      if (m) return m;
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error(`bot-sim printed no ${re} within ${timeoutMs} ms; stdout:\n${out}\nstderr:\n${err}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  return { child, exited, output, type: (line: string) => child.stdin.write(`${line}\n`), out: () => out };
}

test('bot-sim --help lists the options and the chat commands; a bad option is one line and exit 2', async () => {
  const help = start(['--help']);
  expect(await help.exited).toBe(0);
  expect(help.out()).toContain('--port N');
  expect(help.out()).toContain('--user-id N');
  expect(help.out()).toContain(':file PATH [caption]');
  const bad = start(['--port', 'x']);
  expect(await bad.exited).toBe(2);
}, 120_000);

test('a chat: text, buttons, a document, an invoice paid, deletions and edits, then :quit', async () => {
  const sim = start(['--port', '0', '--user-id', '4242', '--username', 'shopkeeper']);
  try {
    // Long: the command builds dist/ first when the sources changed since the last build.
    const banner = await sim.output(
      /BOT_TOKEN=(\S+) BOT_API_ROOT=(http:\/\/127\.0\.0\.1:\d+) npm start/,
      0,
      90_000,
    );
    const [, token, root] = banner;
    expect(sim.out()).toContain('You are user 4242 (@shopkeeper)');
    const api = new Api(token!, { apiRoot: root! });
    expect(await api.getMe()).toMatchObject({ is_bot: true, username: 'redeem_sim_bot' });

    // The bot's side: one long poll at a time, confirming what it has read.
    let offset = 0;
    async function next(): Promise<Update> {
      for (;;) {
        const [u] = await api.getUpdates({ offset, timeout: 10, limit: 1 });
        if (u) {
          offset = u.update_id + 1;
          return u;
        }
      }
    }

    sim.type('/start abc123');
    const start1 = await next();
    expect(start1.message).toMatchObject({
      text: '/start abc123',
      from: { id: 4242, username: 'shopkeeper' },
      chat: { id: 4242, type: 'private' },
      entities: [{ type: 'bot_command', offset: 0, length: 6 }],
    });
    const mark = sim.out().length;
    const question = await api.sendMessage(4242, '[live] redeem?\nplayer_id: 5123456789', {
      reply_markup: {
        inline_keyboard: [
          [
            { text: 'Redeem', callback_data: 'redeem:1' },
            { text: 'Cancel', callback_data: 'cancel:1' },
          ],
        ],
      },
    });
    await sim.output(
      /bot: \[live\] redeem\?\n {5}player_id: 5123456789\n\[1\] Redeem {2}\[2\] Cancel\n/,
      mark,
    );

    sim.type('!2');
    const press = await next();
    expect(press.callback_query).toMatchObject({
      data: 'cancel:1',
      message: { message_id: question.message_id },
    });
    await api.answerCallbackQuery(press.callback_query!.id, { text: 'cancelled' });
    await api.editMessageText(4242, question.message_id, '[live] cancelled');
    await sim.output(/bot \(notice\): cancelled\n/, mark);
    await sim.output(/bot \(edited\): \[live\] cancelled\n/, mark);
    sim.type('!1');
    await sim.output(/\(no bot message has buttons\)\n/, mark);

    const codes = join(dir, 'codes.txt');
    writeFileSync(codes, 'LIVE-A-660\nLIVE-B-660\n');
    sim.type(`:file ${codes} /addstock 660`);
    const doc = await next();
    expect(doc.message).toMatchObject({
      caption: '/addstock 660',
      caption_entities: [{ type: 'bot_command', offset: 0, length: 9 }],
      document: { file_name: 'codes.txt', file_size: 22 },
    });
    const file = await api.getFile(doc.message!.document!.file_id);
    const bytes = await (await fetch(`${root}/file/bot${token}/${file.file_path}`)).text();
    expect(bytes).toBe('LIVE-A-660\nLIVE-B-660\n');
    await api.deleteMessage(4242, doc.message!.message_id);
    await sim.output(/\(sent codes\.txt, 22 bytes\)\n/, mark);
    await sim.output(/\(your message "\/addstock 660" was deleted by the bot\)\n/, mark);

    await api.sendInvoice(
      4242,
      'Wallet top-up',
      'Top-up 12.50 USD',
      'tpr_x',
      'USD',
      [{ label: 'Top-up', amount: 1250 }],
      {
        provider_token: 'sim',
      },
    );
    await sim.output(/bot: invoice "Wallet top-up": 12\.50 USD \(type :pay to pay\)\n/, mark);
    sim.type(':pay');
    const checkout = await next();
    expect(checkout.pre_checkout_query).toMatchObject({
      total_amount: 1250,
      currency: 'USD',
      invoice_payload: 'tpr_x',
    });
    await api.answerPreCheckoutQuery(checkout.pre_checkout_query!.id, true);
    const paid = await next();
    expect(paid.message?.successful_payment).toMatchObject({ total_amount: 1250, invoice_payload: 'tpr_x' });
    await sim.output(/\(paid 12\.50 USD, charge sim_charge_\S+\)\n/, mark);
    const bye = await api.sendMessage(4242, '[live] balance_usd: 12.50');
    await sim.output(/bot: \[live\] balance_usd: 12\.50\n/, mark);
    await api.deleteMessage(4242, bye.message_id);
    await sim.output(/bot \(deleted\): \[live\] balance_usd: 12\.50\n/, mark);

    sim.type(':quit');
    expect(await sim.exited).toBe(0);
    // The person's own lines are not echoed back as the bot's.
    expect(sim.out()).not.toMatch(/bot: \/start/);
  } finally {
    sim.child.kill();
  }
}, 120_000);
