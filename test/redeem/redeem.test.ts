import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { bearer, createMerchant, createTestApp, type TestApp } from '../helpers/app.ts';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ sandboxSlowMs: 50 });
});
afterAll(() => t.close());

let seq = 0;
const uniq = (prefix: string) => `${prefix}-${Date.now().toString(36)}${(seq++).toString(36)}`.toUpperCase();

function redeem(key: string, body: unknown, idem = `k-${seq++}-${Math.random()}`) {
  return t.api.inject({
    method: 'POST',
    url: '/v1/redeem',
    headers: { ...bearer(key), 'idempotency-key': idem, 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
}

describe('POST /v1/redeem, caller codes', () => {
  test('one of each outcome', async () => {
    const m = await createMerchant(t, { topup: { test: 1 } });
    const ok = uniq('OKAY');
    const body = {
      player_id: '5123456789',
      codes: [`${ok}-60`, uniq('USED'), uniq('INVALID'), uniq('FAIL'), uniq('TIMEOUT')],
      reference: 'order-1',
    };
    const res = await redeem(m.key, body);
    expect(res.statusCode).toBe(200);
    const r = res.json();
    expect(
      r.codes.map((c: { status: string; disposition: string; billed: boolean }) => [
        c.status,
        c.disposition,
        c.billed,
      ]),
    ).toEqual([
      ['activated', 'consumed', true],
      ['code_used', 'deleted', true],
      ['invalid_code', 'deleted', true],
      ['failed', 'kept', false],
      ['failed', 'quarantined', false],
    ]);
    expect(r.summary).toEqual({ activated: 1, code_used: 1, invalid_code: 1, bad_player: 0, failed: 2 });
    expect(r.uc_delivered).toBe(60);
    expect(r.billed_requests).toBe(3);
    expect(r.refunded_requests).toBe(2);
    expect(res.headers['svc-cost']).toBe('3');
    expect(res.headers['svc-quota-used']).toBe('3');
    expect(res.headers['svc-quota-remaining']).toBe('97');

    const again = await redeem(m.key, body, 'fixed');
    expect(again.statusCode).toBe(422); // the ok code is used now
    const replay = await redeem(m.key, body, 'fixed');
    expect(replay.statusCode).toBe(422);
    expect(replay.headers['svc-idempotent-replay']).toBe('true');
    expect(replay.headers['svc-cost']).toBe('0');
    expect(replay.json()).toEqual(again.json());
    expect(replay.headers['x-request-id']).toBe(again.headers['x-request-id']);
  });
});
