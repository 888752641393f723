// What the event log tests share: a test app with private webhook targets allowed and an
// injected clock, a throwaway CA and HTTPS receivers, and small calls (register, an ended async
// job, its event, one pass of the webhook worker trusting the CA).
import { afterAll, beforeAll, expect } from 'vitest';
import { ManualClock } from '../../src/core/clock.ts';
import { deliverDueEvents } from '../../src/core/webhooks/delivery.ts';
import { bearer, createTestApp, type Merchant, type TestApp } from './app.ts';
import { createTestCa, type Receiver, startReceiver, type TestCa } from './https-receiver.ts';
import { redeem, uniqueCode } from './redeem.ts';

const PLAYER = '5123456789';

export function eventKit() {
  const clock = new ManualClock('2026-11-22T09:00:00Z');
  const receivers: Receiver[] = [];
  const kit = { clock, t: undefined as unknown as TestApp, ca: undefined as unknown as TestCa };
  beforeAll(async () => {
    kit.ca = createTestCa();
    kit.t = await createTestApp({
      clock,
      env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_RETRY_DELAYS: '10,60,300' },
    });
  });
  afterAll(async () => {
    await Promise.all(receivers.map((r) => r.close()));
    await kit.t?.close();
    kit.ca?.remove();
  });

  const get = (key: string, url: string) => kit.t.api.inject({ method: 'GET', url, headers: bearer(key) });
  return {
    ...kit,
    get t() {
      return kit.t;
    },
    get ca() {
      return kit.ca;
    },
    get,
    async newReceiver() {
      const r = await startReceiver(kit.ca);
      // Signatures carry the injected clock's time.
      r.nowSec = () => Math.floor(clock.now().getTime() / 1000);
      receivers.push(r);
      return r;
    },
    redeliver: (key: string, id: string) =>
      kit.t.api.inject({ method: 'POST', url: `/v1/events/${id}/redeliver`, headers: bearer(key) }),
    /** One pass of the webhook worker, trusting the test CA. */
    deliver: (opts: { trustCa?: boolean } = {}) =>
      deliverDueEvents(kit.t.ctx, opts.trustCa === false ? {} : { ca: kit.ca.ca }),
    async register(key: string, url: string): Promise<string> {
      const res = await kit.t.api.inject({
        method: 'POST',
        url: '/v1/webhook',
        headers: { ...bearer(key), 'content-type': 'application/json' },
        payload: { url },
      });
      expect(res.statusCode, res.body).toBe(200);
      return res.json().secret;
    },
    /** An async redeem of one code, waited for until its job has ended (and its event is written). */
    async finishedJob(m: Merchant, marker = 'OK'): Promise<string> {
      const res = await redeem(kit.t, m.key, { player_id: PLAYER, codes: [uniqueCode(marker)], async: true });
      expect(res.statusCode, res.body).toBe(202);
      const jobId = res.json().job_id as string;
      for (let i = 0; i < 400; i++) {
        const job = await get(m.key, `/v1/jobs/${jobId}`);
        if (!['queued', 'running'].includes(job.json().status)) return jobId;
        await new Promise((r) => setTimeout(r, 25));
      }
      throw new Error(`job ${jobId} did not end`);
    },
    async eventOfJob(m: Merchant, jobId: string) {
      const res = await get(m.key, `/v1/events?job_id=${jobId}`);
      expect(res.statusCode, res.body).toBe(200);
      const events = res.json().events;
      expect(events).toHaveLength(1);
      return events[0];
    },
  };
}

/** An attempt as the event log shows it. */
export const attempt = (status: number | null, error: string | null, redelivery = false) => ({
  at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
  status,
  error,
  duration_ms: expect.any(Number),
  redelivery,
});
