// The SDK's event log and statements against a real server process and a real HTTPS receiver:
// events.list as an async iterator over pages, events.get, events.redeliver (the receiver gets
// the same delivery id again, signed with the current secret) and its 409, statements.get and
// statements.csv (read back by an independent CSV parser to the same numbers).
import Papa from 'papaparse';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { RedeemGateway, RedeemGatewayError } from '../../sdk/src/index.ts';
import { createTestCa, type Receiver, startReceiver, type TestCa } from '../helpers/https-receiver.ts';
import { createProcessMerchant, type ServerProcess, serverProcesses, waitUntil } from '../helpers/process.ts';

const processes = serverProcesses();
let server: ServerProcess;
let ca: TestCa;
let receiver: Receiver;
const tag = Date.now().toString(36).toUpperCase();
let seq = 0;

beforeAll(async () => {
  ca = createTestCa();
  receiver = await startReceiver(ca);
  server = await processes.start(processes.dataDir(), {
    NODE_EXTRA_CA_CERTS: ca.caFile,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_RETRY_DELAYS: '1,1,1',
  });
}, 90_000);
afterAll(async () => {
  await receiver?.close();
  ca?.remove();
});

describe('client.events and client.statements', () => {
  test('list pages, get, redeliver; statements as JSON and CSV', async () => {
    const m = await createProcessMerchant(server);
    const client = new RedeemGateway({ apiKey: m.key, baseUrl: server.url, retryBaseMs: 50 });
    receiver.secret = (await client.registerWebhook(receiver.url)).secret;
    const jobs: string[] = [];
    for (let i = 0; i < 3; i++) {
      const accepted = await client.redeemAsync({
        player_id: '5123456789',
        codes: [`OK-SDKEV-${tag}-${seq++}`],
      });
      await client.waitForJob(accepted.job_id, { pollIntervalMs: 1000 });
      jobs.push(accepted.job_id);
    }
    await receiver.waitFor(3);
    // Recorded just after the receiver answered.
    const pages = await waitUntil('three delivered events', async () => {
      const got = [];
      for await (const page of client.events.list({ limit: 2, state: 'delivered' })) got.push(page);
      return got.flatMap((p) => p.events).length === 3 ? got : undefined;
    });
    expect(pages.map((p) => p.events.length)).toEqual([2, 1]);
    expect(pages.at(-1)!.next_cursor).toBeNull();
    const events = pages.flatMap((p) => p.events);
    expect(events.map((e) => e.job_id)).toEqual([...jobs].reverse());

    const one = await client.events.get(events[0]!.id);
    expect(one).toMatchObject({ ok: true, id: events[0]!.id, state: 'delivered', job_id: jobs[2] });
    expect(one.attempts).toEqual([
      {
        at: expect.any(String),
        status: 200,
        error: null,
        duration_ms: expect.any(Number),
        redelivery: false,
      },
    ]);
    expect((one.data as { job_id: string }).job_id).toBe(jobs[2]);

    const accepted = await client.events.redeliver(events[0]!.id);
    expect(accepted).toEqual({
      ok: true,
      request_id: expect.stringMatching(/^req_/),
      event_id: events[0]!.id,
    });
    const [, , , again] = await receiver.waitFor(4);
    expect(again!.headers['svc-delivery-id']).toBe(events[0]!.id);
    expect(again!.verdict).toBeNull();
    const after = await waitUntil('the redelivery recorded', async () => {
      const e = await client.events.get(events[0]!.id);
      return e.attempts.length === 2 ? e : undefined;
    });
    expect(after.attempts[1]).toMatchObject({ status: 200, error: null, redelivery: true });

    const missing = await client.events.get('evt_000000000000000000000000').catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(RedeemGatewayError);
    expect((missing as RedeemGatewayError).status).toBe(404);

    const statement = await client.statements.get();
    expect(statement).toMatchObject({ ok: true, mode: 'test', currency: 'USD' });
    expect(statement.days).toHaveLength(30);
    expect(statement.totals.codes.activated).toBe(3);
    expect(statement.totals.topups_usd).toBe(5);
    expect(statement.totals.closing_balance_usd).toBe((await client.me()).balance_usd);
    const csv = await client.statements.csv({ from: statement.from, to: statement.to });
    const rows = Papa.parse<Record<string, string>>(csv, { header: true, skipEmptyLines: true });
    expect(rows.errors).toEqual([]);
    expect(rows.data.map((r) => [r.date, Number(r.codes_activated), Number(r.closing_balance_usd)])).toEqual(
      statement.days.map((d) => [d.date, d.codes.activated, d.closing_balance_usd]),
    );
  }, 120_000);
});
