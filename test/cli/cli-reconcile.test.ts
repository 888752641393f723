// The admin CLI's jobs table, event log and statement commands against a real admin listener:
// `jobs list` shows per-outcome counts, a badge for jobs that need a look and the customer's
// name; `events list|show|redeliver`; `statements ID [--csv]`, whose CSV is the API's own.
import Papa from 'papaparse';
import { beforeAll, describe, expect, test } from 'vitest';
import { listenAdmin, runAdminCli } from '../helpers/admin-cli.ts';
import { adminCall, createMerchant } from '../helpers/app.ts';
import { eventKit } from '../helpers/event-kit.ts';
import { redeem, uniqueCode } from '../helpers/redeem.ts';

const kit = eventKit();
const { get, deliver, register, finishedJob, eventOfJob } = kit;

let url: string;
beforeAll(async () => {
  url = await listenAdmin(kit.t.admin);
});

const cli = (args: string[]) => runAdminCli(url, args);

describe('the admin CLI', () => {
  test('jobs list: a table with outcome counts, badges and customer names', async () => {
    const m2 = await createMerchant(kit.t);
    const ok = await redeem(kit.t, m2.key, {
      player_id: '5123456789',
      codes: [uniqueCode(), uniqueCode('USED')],
    });
    expect(ok.statusCode).toBe(200);
    // Newest first: each job a second later than the one before.
    kit.clock.advance(1000);
    const none = await redeem(kit.t, m2.key, { player_id: '0001234567', codes: [uniqueCode()] });
    expect(none.statusCode).toBe(422);
    kit.clock.advance(1000);
    const held = await redeem(kit.t, m2.key, { player_id: '5123456789', codes: [uniqueCode('TIMEOUT')] });
    expect(held.statusCode).toBe(422);
    kit.clock.set('2026-11-22T09:00:00Z');
    const run = await cli(['jobs', 'list', '--customer', String(m2.customerId)]);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(
      /^ {2}job +created +customer +mode +kind +status +check +done +activated +billed_fail +refunded +quarantined$/,
    );
    const name = (
      await adminCall<{ customer: { name: string } }>(kit.t, 'GET', `/admin/v1/customers/${m2.customerId}`)
    ).customer.name;
    const cells = lines.slice(1).map((l) => l.trim().split(/ {2,}/));
    expect(cells.map((c) => c.slice(2))).toEqual([
      [`${m2.customerId} ${name}`, 'test', 'sync', 'completed', 'QUARANTINED', '1/1', '0', '0', '0', '1'],
      [`${m2.customerId} ${name}`, 'test', 'sync', 'completed', 'NONE ACTIVATED', '1/1', '0', '0', '1', '0'],
      [`${m2.customerId} ${name}`, 'test', 'sync', 'completed', 'ok', '2/2', '1', '1', '0', '0'],
    ]);
  });

  test('events list, show and redeliver', async () => {
    const m = await createMerchant(kit.t);
    const receiver = await kit.newReceiver();
    receiver.secret = await register(m.key, receiver.url);
    const evt = await eventOfJob(m, await finishedJob(m));
    await deliver();
    const list = await cli([
      'events',
      'list',
      String(m.customerId),
      '--mode',
      'test',
      '--state',
      'delivered',
    ]);
    expect(list).toMatchObject({ code: 0, stderr: '' });
    expect(list.stdout).toContain(evt.id);
    expect(list.stdout).toMatch(new RegExp(`${evt.id} .* delivered +1 +200 +-`));
    const again = await cli(['events', 'redeliver', evt.id]);
    expect(again).toEqual({
      code: 0,
      stderr: '',
      stdout: `redelivery of ${evt.id} queued; see: events show ${evt.id}\n`,
    });
    expect((await cli(['events', 'redeliver', evt.id])).stderr).toBe(
      'error: conflict: a redelivery of this event is still in flight; wait for its result\n',
    );
    await deliver();
    const show = await cli(['events', 'show', evt.id]);
    expect(show.stdout.split('\n')[0]).toBe(
      `event ${evt.id} (redeem.completed) of job ${evt.job_id}, test: delivered`,
    );
    expect(show.stdout).toMatch(/200 +- +\d+ ms +scheduled/);
    expect(show.stdout).toMatch(/200 +- +\d+ ms +redelivery/);
    expect(receiver.requests).toHaveLength(2);
    const json = JSON.parse((await cli(['events', 'show', evt.id, '--json'])).stdout);
    expect(json.attempts).toHaveLength(2);
    expect((await cli(['events', 'show', 'evt_nope'])).code).not.toBe(0);
  });

  test('statements: a table, and --csv with the same bytes as the API', async () => {
    const m = await createMerchant(kit.t, { topup: { test: '1.5' } });
    const table = await cli([
      'statements',
      String(m.customerId),
      '--mode',
      'test',
      '--from',
      '2026-11-21',
      '--to',
      '2026-11-22',
    ]);
    expect(table).toMatchObject({ code: 0, stderr: '' });
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('statement test 2026-11-21 .. 2026-11-22 (USD)');
    expect(lines.at(-1)!.trim().split(/ {2,}/)).toEqual([
      'total',
      '0',
      '0',
      '0',
      '0/0/0/0/0',
      '0',
      '1.5',
      '0',
      '0',
      '1.5',
    ]);
    const csv = await cli([
      'statements',
      String(m.customerId),
      '--mode',
      'test',
      '--from',
      '2026-11-21',
      '--to',
      '2026-11-22',
      '--csv',
    ]);
    const api = await get(m.key, '/v1/statements?from=2026-11-21&to=2026-11-22');
    const viaApi = await kit.t.api.inject({
      method: 'GET',
      url: '/v1/statements?from=2026-11-21&to=2026-11-22',
      headers: { authorization: `Bearer ${m.key}`, accept: 'text/csv' },
    });
    expect(csv.stdout).toBe(`${viaApi.body.trimEnd()}\n`);
    const rows = Papa.parse<Record<string, string>>(csv.stdout, { header: true, skipEmptyLines: true }).data;
    expect(rows.map((r) => Number(r.closing_balance_usd))).toEqual(
      api.json().days.map((d: { closing_balance_usd: number }) => d.closing_balance_usd),
    );
    expect((await cli(['statements'])).code).toBe(2);
  });
});
