// webhooks.verify() of the SDK against real signed deliveries from a server process to an HTTPS
// receiver: the raw bytes verify (string, bytes) and give the typed event, which matches the
// document; tampered and re-serialised bodies, stale or future timestamps, malformed headers and
// rotated secrets are refused; several v1 values are accepted.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { RedeemGateway, type WebhookEvent, WebhookVerificationError, webhooks } from '../../sdk/src/index.ts';
import { createTestCa, type Receiver, startReceiver, type TestCa } from '../helpers/https-receiver.ts';
import { checkWebhookPayload } from '../helpers/openapi-check.ts';
import { createProcessMerchant, type ServerProcess, serverProcesses } from '../helpers/process.ts';

const processes = serverProcesses();
let ca: TestCa;
let receiver: Receiver;
let server: ServerProcess;
let client: RedeemGateway;
const tag = Date.now().toString(36).toUpperCase();
let seq = 0;

beforeAll(async () => {
  ca = createTestCa();
  receiver = await startReceiver(ca);
  server = await processes.start(processes.dataDir(), {
    NODE_EXTRA_CA_CERTS: ca.caFile,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  });
  const m = await createProcessMerchant(server);
  client = new RedeemGateway({ apiKey: m.key, baseUrl: server.url });
}, 90_000);
afterAll(async () => {
  await receiver?.close();
  ca?.remove();
});

/** Runs an async redeem to its end and returns the delivery its webhook received. */
async function deliveredJob() {
  const before = receiver.requests.length;
  const accepted = await client.redeemAsync({ player_id: '5123456789', codes: [`OK-HOOK-${tag}-${seq++}`] });
  const result = await client.waitForJob(accepted.job_id);
  const [delivery] = (await receiver.waitFor(before + 1)).slice(before);
  return {
    delivery: delivery!,
    result,
    t: Number(/t=(\d+)/.exec(String(delivery!.headers['svc-signature']))![1]),
  };
}

const reason = async (p: Promise<unknown>) => {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WebhookVerificationError);
  return (err as WebhookVerificationError).reason;
};

test('a real delivery verifies from its raw bytes and gives the typed event, as documented', async () => {
  const registration = await client.registerWebhook(receiver.url);
  expect(registration).toMatchObject({ ok: true, url: receiver.url });
  receiver.secret = registration.secret;
  const { delivery, result } = await deliveredJob();
  const header = delivery.headers['svc-signature'] as string;

  const event: WebhookEvent = await webhooks.verify(delivery.raw, header, registration.secret);
  expect(event.event).toBe('redeem.completed');
  expect(event.id).toBe(delivery.headers['svc-delivery-id']);
  expect(delivery.headers['svc-event']).toBe('redeem.completed');
  if (event.event !== 'redeem.completed') throw new Error('unreachable');
  expect(event.data).toEqual(result);
  expect(event.data.job_id).toBe(result.job_id);
  // The same bytes as a string, and as an ArrayBuffer, verify too.
  expect(await webhooks.verify(delivery.raw.toString('utf8'), header, registration.secret)).toEqual(event);
  const copy = new Uint8Array(delivery.raw);
  expect(await webhooks.verify(copy.buffer, header, registration.secret)).toEqual(event);
  // The payload matches the document's webhooks entry.
  expect(checkWebhookPayload('redeem.completed', delivery.raw.toString('utf8'))).toEqual([]);
  // The server's own receiver-side check agrees.
  expect(delivery.verdict).toBeNull();
});

test('tampered or re-serialised bodies, stale or future timestamps and malformed headers are refused', async () => {
  const registration = await client.registerWebhook(receiver.url);
  receiver.secret = registration.secret;
  const { delivery, t } = await deliveredJob();
  const header = delivery.headers['svc-signature'] as string;
  const secret = registration.secret;
  const raw = delivery.raw;

  const tampered = Buffer.from(raw);
  const at = tampered.indexOf('"uc_delivered":') + '"uc_delivered":'.length;
  tampered[at] = tampered[at] === 0x39 ? 0x38 : tampered[at]! + 1;
  expect(await reason(webhooks.verify(tampered, header, secret))).toBe('signature_mismatch');
  const pretty = JSON.stringify(JSON.parse(raw.toString('utf8')), null, 2);
  expect(await reason(webhooks.verify(pretty, header, secret))).toBe('signature_mismatch');

  // Tolerance: 300 s either way by default, or as given.
  expect((await webhooks.verify(raw, header, secret, { nowSec: t + 300 })).id).toBeTruthy();
  expect(await reason(webhooks.verify(raw, header, secret, { nowSec: t + 301 }))).toBe(
    'timestamp_out_of_tolerance',
  );
  expect(await reason(webhooks.verify(raw, header, secret, { nowSec: t - 301 }))).toBe(
    'timestamp_out_of_tolerance',
  );
  expect(await reason(webhooks.verify(raw, header, secret, { nowSec: t + 11, toleranceSec: 10 }))).toBe(
    'timestamp_out_of_tolerance',
  );

  const v1 = /v1=([0-9a-f]+)/.exec(header)![1]!;
  expect(await reason(webhooks.verify(raw, undefined, secret))).toBe('missing_header');
  expect(await reason(webhooks.verify(raw, `t=abc,v1=${v1}`, secret))).toBe('bad_timestamp');
  expect(await reason(webhooks.verify(raw, `v1=${v1}`, secret))).toBe('bad_timestamp');
  expect(await reason(webhooks.verify(raw, `t=${t}`, secret))).toBe('missing_v1');
  // Several v1 values: any one matching is enough; unknown schemes are ignored.
  const several = `t=${t},v0=abc,v1=${'0'.repeat(64)},v1=${v1}`;
  expect((await webhooks.verify(raw, several, secret)).id).toBe(delivery.headers['svc-delivery-id']);
  expect(await reason(webhooks.verify(raw, `t=${t},v1=${'0'.repeat(64)}`, secret))).toBe(
    'signature_mismatch',
  );
  // A signature made for another time does not move: t is inside the signed bytes.
  expect(await reason(webhooks.verify(raw, `t=${t + 1},v1=${v1}`, secret))).toBe('signature_mismatch');
  // sign() makes what the service sends.
  expect(await webhooks.sign(raw, secret, t)).toBe(header);
});

test('rotated secrets: after registering again, deliveries verify only with the new secret', async () => {
  const old = await client.registerWebhook(receiver.url);
  receiver.secret = old.secret;
  const before = await deliveredJob();
  const rotated = await client.registerWebhook(receiver.url);
  expect(rotated.secret).not.toBe(old.secret);
  receiver.secret = rotated.secret;
  const after = await deliveredJob();
  const h = (d: typeof after) => d.delivery.headers['svc-signature'] as string;

  expect((await webhooks.verify(after.delivery.raw, h(after), rotated.secret)).event).toBe(
    'redeem.completed',
  );
  expect(await reason(webhooks.verify(after.delivery.raw, h(after), old.secret))).toBe('signature_mismatch');
  expect((await webhooks.verify(before.delivery.raw, h(before), old.secret)).event).toBe('redeem.completed');
  expect(await reason(webhooks.verify(before.delivery.raw, h(before), rotated.secret))).toBe(
    'signature_mismatch',
  );
});
