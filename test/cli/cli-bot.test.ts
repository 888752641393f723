// The chat bot's operator commands (docs/reference/bot.md#links-and-roles, docs/reference/bot.md#top-ups): `admin bot status|link|users|unbind` and
// `admin topups list|approve|reject`, against a listening admin app whose bot talks to the Bot API
// stand-in, with a person in the chat following the link the CLI printed. A second app without a
// bot shows the refusal. One run goes through the real `redeem-gateway` entry as a child process
// for its exit code.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type AdminCliRun, listenAdmin, runAdminCli } from '../helpers/admin-cli.ts';
import { ADMIN_TOKEN, createMerchant, createTestApp, type TestApp } from '../helpers/app.ts';
import { type BotTestApp, createBotTestApp, linkPerson, person, say } from '../helpers/bot.ts';

const ROOT = join(import.meta.dirname, '..', '..');

let t: BotTestApp;
let off: TestApp;
let url: string;
let offUrl: string;

beforeAll(async () => {
  [t, off] = await Promise.all([createBotTestApp(), createTestApp()]);
  [url, offUrl] = await Promise.all([listenAdmin(t.admin), listenAdmin(off.admin)]);
}, 60_000);
afterAll(async () => {
  await Promise.all([t?.close(), off?.close()]);
});

type Run = AdminCliRun;

const cli = (args: string[], adminUrl = url): Promise<Run> => runAdminCli(adminUrl, args);

/** `redeem-gateway admin …` as its own process (TypeScript through tsx: no build of dist/). */
function cliProcess(args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'admin', ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ADMIN_URL: url, ADMIN_TOKEN },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += String(d);
    });
    child.stderr.on('data', (d) => {
      stderr += String(d);
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

function onlyJson(run: Run): Record<string, unknown> {
  expect(run.stdout.trimEnd().split('\n')).toHaveLength(1);
  return JSON.parse(run.stdout);
}

describe('admin bot …', () => {
  test('status says whether the bot is on, and how many people are linked', async () => {
    const json = onlyJson(await cli(['bot', 'status', '--json']));
    expect(json).toEqual({
      ok: true,
      request_id: expect.stringMatching(/^req_/),
      enabled: true,
      username: 'redeem_sim_bot',
      updates: 'polling',
      last_update_at: null,
      linked_users: expect.any(Number),
      polling_instance: json.this_instance,
      this_instance: expect.stringMatching(/\S/),
    });
    expect(await cli(['bot', 'status'])).toEqual({
      code: 0,
      stdout: `bot: on as @redeem_sim_bot, updates by polling, last update never\nlinked people: ${json.linked_users}\npolling now: ${json.this_instance} (this process: ${json.this_instance})\n`,
      stderr: '',
    });
    const offJson = onlyJson(await cli(['bot', 'status', '--json'], offUrl));
    expect(offJson).toMatchObject({ enabled: false, username: null });
    expect(await cli(['bot', 'status'], offUrl)).toEqual({
      code: 0,
      stdout: `bot: off (set BOT_TOKEN to turn it on)\nlinked people: ${offJson.linked_users}\n`,
      stderr: '',
    });
  });

  test('link prints the URL and token once; the person follows it; users lists them; unbind ends it', async () => {
    const m = await createMerchant(t);
    const ID = String(m.customerId);
    expect(await cli(['bot', 'users', ID])).toEqual({
      code: 0,
      stdout: `no one is bound to the bot for customer ${ID}\n`,
      stderr: '',
    });

    const linked = await cli(['bot', 'link', ID, '--role', 'staff']);
    expect(linked.code, linked.stderr).toBe(0);
    expect(linked.stderr).toBe('');
    const [intro, link, tokenLine, ...rest] = linked.stdout.split('\n');
    expect(rest).toEqual(['']);
    const token = /^token: ([A-Za-z0-9]{32,}) \(or the person sends the bot: \/start \1\)$/.exec(
      tokenLine!,
    )?.[1];
    expect(token).toBeDefined();
    expect(link).toBe(`https://t.me/redeem_sim_bot?start=${token}`);
    // 2026-11-22T09:00:00Z is the test clock: the link expires 24 h later.
    expect(intro).toMatch(
      new RegExp(
        `^link bl_[A-Za-z0-9]+ for customer ${ID} as staff: single use, valid 24 h \\(until 2026-11-23T09:00:00(\\.000)?Z\\); shown only this once:$`,
      ),
    );
    // Stored only as a digest: no row holds the token.
    const rows = await t.ctx.db.query('select * from bot_links where customer_id = $1', [m.customerId]);
    expect(rows.rows).toHaveLength(1);
    expect(JSON.stringify(rows.rows)).not.toContain(token!);

    const who = person('clerk');
    const reply = await say(t, who, `/start ${token}`);
    expect(reply.text).toMatch(/^Linked to /);
    // Single use: a second person with the same token is refused.
    const other = person('late');
    expect((await say(t, other, `/start ${token}`)).text).not.toMatch(/^Linked to /);

    const users = await cli(['bot', 'users', ID]);
    expect(users.code, users.stderr).toBe(0);
    const lines = users.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(`bot users of customer ${ID}:`);
    expect(lines[1]).toMatch(/^ {2}user_id +telegram_id +username +role +bound_at +last_seen_at$/);
    expect(lines).toHaveLength(3);
    const cells = lines[2]!.trim().split(/\s{2,}/);
    expect(cells).toEqual([
      expect.stringMatching(/^bu_[A-Za-z0-9]+$/),
      String(who.id),
      `@${who.username}`,
      'staff',
      expect.stringMatching(/^2026-11-22T09:00:0\d/),
      expect.stringMatching(/^2026-11-22T09:00:0\d/),
    ]);
    const userId = cells[0]!;
    const usersJson = onlyJson(await cli(['bot', 'users', ID, '--json']));
    expect(usersJson.users).toEqual([
      {
        user_id: userId,
        telegram_user_id: who.id,
        username: who.username,
        role: 'staff',
        bound_at: expect.any(String),
        last_seen_at: expect.any(String),
      },
    ]);

    expect(await cli(['bot', 'unbind', userId])).toEqual({
      code: 0,
      stdout: `bot user ${userId} unbound from customer ${ID}\n`,
      stderr: '',
    });
    expect(await cli(['bot', 'users', ID])).toEqual({
      code: 0,
      stdout: `no one is bound to the bot for customer ${ID}\n`,
      stderr: '',
    });
    // From then on the person is treated as unlinked.
    expect((await say(t, who, '/account')).text).toMatch(/not linked/);
    // A second unbind, through the real command: one line and exit code 1.
    expect(await cliProcess(['bot', 'unbind', userId])).toEqual({
      code: 1,
      stdout: '',
      stderr: 'error: not_found: unknown or already unbound bot user\n',
    });
    const audit = await t.ctx.db.query<{ action: string; actor: string }>(
      `select action, actor from audit_events where customer_id = $1 and action like 'bot.%' order by at, id`,
      [m.customerId],
    );
    expect(audit.rows.map((r) => [r.action, r.actor])).toEqual([
      ['bot.link', 'root'],
      ['bot.bind', `telegram:${who.id}`],
      ['bot.unbind', 'root'],
    ]);
  }, 60_000);

  test('refusals are one line: exit 1 from the API, exit 2 for the command line', async () => {
    const m = await createMerchant(t);
    const ID = String(m.customerId);
    const offId = String((await createMerchant(off)).customerId);
    const [noRole, badRole, unknownCustomer, noBot, unknownUser, usersOfNobody] = await Promise.all([
      cli(['bot', 'link', ID]),
      cli(['bot', 'link', ID, '--role', 'boss']),
      cli(['bot', 'link', '8000000000000', '--role', 'owner']),
      cli(['bot', 'link', offId, '--role', 'owner'], offUrl),
      cli(['bot', 'unbind', 'bu_nobody']),
      cli(['bot', 'users', '8000000000000']),
    ]);
    expect(noRole).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'error: --role is required (usage: redeem-gateway admin bot link CUSTOMER_ID --role owner|staff)\n',
    });
    expect(badRole.code).toBe(1);
    expect(badRole.stdout).toBe('');
    expect(badRole.stderr).toMatch(/^error: bad_request: [^\n]*role[^\n]*\n$/);
    expect(unknownCustomer).toEqual({ code: 1, stdout: '', stderr: 'error: not_found: unknown customer\n' });
    expect(noBot).toEqual({
      code: 1,
      stdout: '',
      stderr: 'error: conflict: no chat bot is configured (set BOT_TOKEN)\n',
    });
    expect(unknownUser).toEqual({
      code: 1,
      stdout: '',
      stderr: 'error: not_found: unknown or already unbound bot user\n',
    });
    expect(usersOfNobody).toEqual({ code: 1, stdout: '', stderr: 'error: not_found: unknown customer\n' });
    // Nothing was linked by any of them.
    const links = await t.ctx.db.query('select 1 from bot_links where customer_id = $1', [m.customerId]);
    expect(links.rows).toEqual([]);
  });

  test('help lists the bot and top-up commands', async () => {
    const help = await cli(['help']);
    expect(help.code).toBe(0);
    for (const line of [
      'bot status',
      'bot link CUSTOMER_ID',
      '--role owner|staff',
      'bot users CUSTOMER_ID',
      'bot unbind BOT_USER_ID',
      'topups list',
      '--state pending|paid|approved|rejected|expired',
      'topups approve REQUEST_ID',
      'topups reject REQUEST_ID',
      '--reason TEXT',
    ]) {
      expect(help.stdout).toContain(line);
    }
  });
});

describe('admin topups …', () => {
  /** A live `/topup` by an owner in the chat: a pending request; its id. */
  async function asked(who: Parameters<typeof say>[1], usd: string): Promise<string> {
    const reply = await say(t, who, `/topup ${usd}`);
    const id = /Top-up request (tpr_[A-Za-z0-9]+) made/.exec(reply.text ?? '')?.[1];
    if (!id) throw new Error(`no request made: ${reply.text}`);
    return id;
  }

  test('list, approve (credited once, however often), reject with a reason; decided is final', async () => {
    const m = await createMerchant(t);
    const ID = String(m.customerId);
    const owner = await linkPerson(t, m.customerId, 'owner', person('payer'));
    const first = await asked(owner, '25');
    const second = await asked(owner, '10.5');

    const listed = await cli(['topups', 'list', '--state', 'pending', '--customer', ID]);
    expect(listed.code, listed.stderr).toBe(0);
    const lines = listed.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('top-up requests, newest first:');
    expect(lines[1]).toMatch(
      /^ {2}id +customer +mode +usd +state +telegram_id +created_at +decided_at +decided_by +note$/,
    );
    expect(lines.slice(2).map((l) => l.trim().split(/\s{2,}/))).toEqual([
      [
        second,
        ID,
        'live',
        '10.5',
        'pending',
        String(owner.id),
        expect.stringMatching(/^2026-11-22T09:00:/),
        '-',
        '-',
        '-',
      ],
      [
        first,
        ID,
        'live',
        '25',
        'pending',
        String(owner.id),
        expect.stringMatching(/^2026-11-22T09:00:/),
        '-',
        '-',
        '-',
      ],
    ]);

    const approved = await cli(['topups', 'approve', first]);
    expect(approved).toEqual({
      code: 0,
      stdout: `top-up request ${first}: 25 USD (live) for customer ${ID}, approved; balance 25 USD\n`,
      stderr: '',
    });
    // Sent again (a retry after a lost answer): the same answer, nothing credited twice.
    expect(await cli(['topups', 'approve', first])).toEqual(approved);
    const ledger = await t.ctx.db.query(
      `select 1 from wallet_ledger where customer_id = $1 and mode = 'live' and kind = 'topup'`,
      [m.customerId],
    );
    expect(ledger.rows).toHaveLength(1);
    const approvedJson = onlyJson(await cli(['topups', 'approve', first, '--json']));
    expect(approvedJson).toEqual({
      ok: true,
      request_id: expect.stringMatching(/^req_/),
      request: {
        id: first,
        customer_id: m.customerId,
        mode: 'live',
        usd: 25,
        state: 'approved',
        telegram_user_id: owner.id,
        created_at: expect.any(String),
        decided_at: expect.any(String),
        decided_by: 'root',
        reason: null,
      },
      balance_usd: 25,
    });

    const [noReason, decided, unknown] = await Promise.all([
      cli(['topups', 'reject', second]),
      cli(['topups', 'reject', first, '--reason', 'too late']),
      cli(['topups', 'approve', 'tpr_nothing']),
    ]);
    expect(noReason).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'error: --reason is required (usage: redeem-gateway admin topups reject REQUEST_ID --reason TEXT)\n',
    });
    expect(decided).toEqual({
      code: 1,
      stdout: '',
      stderr: 'error: conflict: the top-up request is approved, not pending\n',
    });
    expect(unknown).toEqual({ code: 1, stdout: '', stderr: 'error: not_found: unknown top-up request\n' });

    expect(await cli(['topups', 'reject', second, '--reason', 'no transfer arrived'])).toEqual({
      code: 0,
      stdout: `top-up request ${second}: 10.5 USD (live) for customer ${ID}, rejected\n`,
      stderr: '',
    });
    // The person who asked is told, with the reason.
    await t.sim.waitFor(() =>
      t.sim.botMessages(owner.id).find((x) => x.text?.includes('no transfer arrived')),
    );

    expect(await cli(['topups', 'list', '--state', 'pending', '--customer', ID])).toEqual({
      code: 0,
      stdout: 'no top-up requests\n',
      stderr: '',
    });
    const all = onlyJson(await cli(['topups', 'list', '--customer', ID, '--json']));
    expect((all.requests as { id: string; state: string }[]).map((r) => [r.id, r.state])).toEqual([
      [second, 'rejected'],
      [first, 'approved'],
    ]);
    const badState = await cli(['topups', 'list', '--state', 'lost']);
    expect(badState.code).toBe(1);
    expect(badState.stderr).toMatch(/^error: bad_request: [^\n]*state[^\n]*\n$/);
  }, 60_000);
});
