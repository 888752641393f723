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
import { LineJoiner, splitForTelegram } from '../../src/cli/bot-sim-lines.ts';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'redeem-gateway.js');
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
  expect(help.out()).toContain('--users A,B');
  expect(help.out()).toContain('/as NAME');
  expect(help.out()).toMatch(/starts a paste/);
  const bad = start(['--port', 'x']);
  expect(await bad.exited).toBe(2);
  const both = start(['--users', 'a,b', '--username', 'c']);
  expect(await both.exited).toBe(2);
  const twice = start(['--users', 'a,A']);
  expect(await twice.exited).toBe(2);
}, 120_000);

test('lines gather into one message after a trailing backslash or between """ marks', () => {
  const j = new LineJoiner();
  const feed = (lines: string[]) => lines.map((l) => j.push(l)).filter((m) => m !== undefined);
  expect(feed(['/help', '  ', ':pay'])).toEqual([
    { text: '/help', multiLine: false },
    { text: ':pay', multiLine: false },
  ]);
  expect(feed(['/check A-1 \\', 'A-2\\', '  A-3  '])).toEqual([
    { text: '/check A-1\nA-2\nA-3', multiLine: true },
  ]);
  expect(feed(['/addstock 660 """', '', 'B-1', '  B-2', ':quit', 'B-3"""'])).toEqual([
    { text: '/addstock 660\n\nB-1\n  B-2\n:quit\nB-3', multiLine: true },
  ]);
  expect(feed(['"""', '', 'C-1\r', 'C-2', '', '"""'])).toEqual([{ text: 'C-1\nC-2', multiLine: true }]);
  expect(feed(['"""', '  ', '"""'])).toEqual([]);
  expect(j.open).toBe(false);
  feed(['"""', 'D-1']);
  expect([j.open, j.openPaste]).toEqual([true, true]);
});

test('a text over 4096 characters is cut at line ends, as the Telegram apps cut a paste', () => {
  expect(splitForTelegram('a\nb', 4096)).toEqual(['a\nb']);
  expect(splitForTelegram('aaa\nbbb\ncc', 7)).toEqual(['aaa\nbbb', 'cc']);
  expect(splitForTelegram('abcdefghij\nk', 4)).toEqual(['abcd', 'efgh', 'ij\nk']);
  const codes = Array.from({ length: 600 }, (_, i) => `CODE-${String(i).padStart(6, '0')}`).join('\n');
  const parts = splitForTelegram(`/addstock 660\n${codes}`);
  expect(parts.length).toBe(2);
  expect(parts.every((p) => p.length <= 4096)).toBe(true);
  expect(parts.join('\n')).toBe(`/addstock 660\n${codes}`);
});

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
    // The greeting follows the banner, in a write of its own.
    await sim.output(/You are user 4242 \(@shopkeeper\)/, 0, 10_000);
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

test('several people: --users, /as switching who speaks, replies labelled, pastes as one message', async () => {
  const sim = start(['--port', '0', '--user-id', '5000', '--users', 'owner,staff']);
  try {
    const [, token, root] = await sim.output(
      /BOT_TOKEN=(\S+) BOT_API_ROOT=(http:\/\/127\.0\.0\.1:\d+) npm start/,
      0,
      90_000,
    );
    await sim.output(
      /You play 2 people, each in a private chat with the bot:\n {2}owner \(user 5000, @owner\), staff \(user 5001, @staff\)\nowner speaks first/,
    );
    const api = new Api(token!, { apiRoot: root! });
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

    sim.type('/start tok-owner');
    expect((await next()).message).toMatchObject({
      text: '/start tok-owner',
      from: { id: 5000 },
      chat: { id: 5000 },
    });
    let mark = sim.out().length;
    sim.type('/as staff');
    await sim.output(/\(staff \(user 5001, @staff\) speaks now\)\n/, mark);
    sim.type('/start tok-staff');
    expect((await next()).message).toMatchObject({
      text: '/start tok-staff',
      from: { id: 5001, username: 'staff' },
      chat: { id: 5001, type: 'private' },
    });

    // What the bot sends to either is shown with whose chat it went to.
    mark = sim.out().length;
    await api.sendMessage(5000, 'Linked to Demo Shop as owner');
    await api.sendMessage(5001, 'Linked to Demo Shop as staff', {
      reply_markup: { inline_keyboard: [[{ text: 'OK', callback_data: 'ok' }]] },
    });
    await sim.output(/\[owner\] bot: Linked to Demo Shop as owner\n/, mark);
    await sim.output(/\[staff\] bot: Linked to Demo Shop as staff\n\[1\] OK\n/, mark);
    sim.type('!1');
    const press = await next();
    expect(press.callback_query).toMatchObject({ from: { id: 5001 }, data: 'ok' });
    await api.answerCallbackQuery(press.callback_query!.id, { text: 'fine' });
    await sim.output(/\[staff\] bot \(notice\): fine\n/, mark);

    // A paste between """ marks is one message; so is a line continued with a backslash.
    sim.type('/addstock 660 """');
    sim.type('AAA-0001');
    sim.type('AAA-0002');
    sim.type('"""');
    const paste = await next();
    expect(paste.message).toMatchObject({
      text: '/addstock 660\nAAA-0001\nAAA-0002',
      from: { id: 5001 },
      entities: [{ type: 'bot_command', offset: 0, length: 9 }],
    });
    await api.deleteMessage(5001, paste.message!.message_id);
    await sim.output(/\[staff\] \(your message "\/addstock 660" was deleted by the bot\)\n/, mark);
    sim.type('/as owner');
    sim.type('/check AAA-0001 \\');
    sim.type('AAA-0002');
    expect((await next()).message).toMatchObject({ text: '/check AAA-0001\nAAA-0002', from: { id: 5000 } });

    // A paste longer than one Telegram message goes as several, cut at line ends.
    mark = sim.out().length;
    const codes = Array.from({ length: 600 }, (_, i) => `CODE-${String(i).padStart(6, '0')}`);
    sim.child.stdin.write(`"""\n${codes.join('\n')}\n"""\n`);
    await sim.output(/\(sent as 2 messages: Telegram takes at most 4096 characters in one\)\n/, mark);
    const first = await next();
    const second = await next();
    expect(second.update_id).toBe(first.update_id + 1);
    expect(`${first.message!.text}\n${second.message!.text}`).toBe(codes.join('\n'));

    // A name not seen yet is a new person; /as alone lists who is here.
    sim.type('/as carol');
    await sim.output(/\(a new person: carol \(user 5002, @carol\) speaks now\)\n/, mark);
    sim.type('/as');
    await sim.output(/\(owner, staff, carol \(speaking\); \/as NAME switches\)\n/, mark);
    sim.type('hello');
    expect((await next()).message).toMatchObject({ text: 'hello', from: { id: 5002 }, chat: { id: 5002 } });

    sim.type('"""');
    sim.type('BBB-1');
    // An unfinished paste holds everything typed, :quit too, until its closing mark.
    sim.type(':quit');
    await new Promise((r) => setTimeout(r, 300));
    expect(await api.getUpdates({ offset, timeout: 0 })).toEqual([]);
    expect(sim.child.exitCode).toBeNull();
    sim.child.stdin.end();
    expect(await sim.exited).toBe(0);
    expect(sim.out()).toContain('(the message being typed was not finished with """: not sent)');
  } finally {
    sim.child.kill();
  }
}, 120_000);
