// The admin CLI's views across customers: `events all` (failed by default, a table
// with each event's customer and the receiver's last error), `customers webhooks ID` (key: value
// lines, the URL's query values masked) and `money` (a table, --csv, --json), against a
// listening admin app with real HTTPS receivers.
import { beforeAll, describe, expect, test } from 'vitest';
import { listenAdmin, runAdminCli } from '../helpers/admin-cli.ts';
import { createMerchant, type Merchant } from '../helpers/app.ts';
import { eventKit } from '../helpers/event-kit.ts';

const kit = eventKit();
let url: string;
let failing: Merchant;
let failedId: string;
let port: number;

beforeAll(async () => {
  url = await listenAdmin(kit.t.admin);
  failing = await createMerchant(kit.t, { topup: { test: 3 } });
  const bad = await kit.newReceiver();
  bad.fallback = 500;
  port = bad.port;
  bad.secret = await kit.register(failing.key, `${bad.url}?sig=abc`);
  failedId = (await kit.eventOfJob(failing, await kit.finishedJob(failing))).id;
  await kit.deliver();
  for (const wait of [10, 60, 300]) {
    kit.clock.advance(wait * 1000);
    await kit.deliver();
  }
});

const cli = (args: string[]) => runAdminCli(url, args);

describe('operator views in the CLI', () => {
  test('events all: failed events of every customer as one table', async () => {
    const r = await cli(['events', 'all']);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ {2}id +created_at +customer +mode +state +attempts +last_error$/);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(
      new RegExp(
        `^  ${failedId} +2026-11-22T09:00:00Z +${failing.customerId} merchant \\w+ +test +failed +4 +answered 500$`,
      ),
    );
    expect((await cli(['events', 'all', '--state', 'delivered'])).stdout).toBe('no events\n');
    expect((await cli(['events', 'all', '--state', 'any', '--mode', 'live'])).stdout).toBe('no events\n');
    const json = JSON.parse((await cli(['events', 'all', '--json'])).stdout);
    expect(json.events.map((e: { id: string }) => e.id)).toEqual([failedId]);
    const bad = await cli(['events', 'all', '--state', 'dropped']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^error: bad_request: state: /);
  });

  test('customers webhooks: key: value lines, the query value masked', async () => {
    const r = await cli(['customers', 'webhooks', String(failing.customerId)]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(
      [
        `customer: ${failing.customerId}`,
        'live: none registered',
        `test.url: https://127.0.0.1:${port}/hook?sig=***`,
        'test.registered_at: 2026-11-22T09:00:00Z',
        'test.last_24h: 0/4 delivered (0%)',
        'test.failures_in_a_row: 4',
        'test.failing_since: 2026-11-22T09:00:00Z',
        '',
      ].join('\n'),
    );
    expect(r.stdout).not.toContain('abc');
  });

  test('money: a table with totals, --csv and --json', async () => {
    const r = await cli(['money', '--mode', 'test', '--from', '2026-11-21', '--to', '2026-11-22']);
    expect(r.stdout).toBe(
      [
        'money across customers, test, 2026-11-21 to 2026-11-22 (USD):',
        '  date        topups  charges  refunds  adjustments',
        '  2026-11-21  0       0        0        0',
        '  2026-11-22  3       0        0        0',
        '  total       3       0        0        0',
        '',
      ].join('\n'),
    );
    const csv = await cli(['money', '--mode', 'test', '--from', '2026-11-22', '--to', '2026-11-22', '--csv']);
    expect(csv.stdout).toBe(
      'date,topups_usd,charges_usd,refunds_usd,adjustments_usd\r\n2026-11-22,3,0,0,0\n',
    );
    const json = JSON.parse(
      (await cli(['money', '--from', '2026-11-22', '--to', '2026-11-22', '--json'])).stdout,
    );
    expect(json).toMatchObject({ ok: true, mode: null, totals: { topups_usd: 3 } });
  });

  test('customers list and quarantine list print one table, as the other lists do', async () => {
    const listed = await cli(['customers', 'list', '--search', String(failing.customerId)]);
    expect(listed.code, listed.stderr).toBe(0);
    const lines = listed.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ {2}id +name +plan +state +created_at$/);
    expect(lines[1]).toMatch(
      new RegExp(`^  ${failing.customerId} +merchant \\w+ +standard +active +2026-11-22T09:00:00Z$`),
    );
    expect((await cli(['quarantine', 'list', '--customer', String(failing.customerId)])).stdout).toBe(
      'no quarantined codes\nnone settled in the last 7 days\n',
    );
  });
});
