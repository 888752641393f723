// The audit log (docs/reference/operators-and-audit.md#audit-log): every admin route that changes state leaves exactly one audit row
// with the operator, action, customer and request id of the change, in the change's transaction;
// a refused request leaves none; nothing can update or delete a row; the list filters and pages.
// The table below is checked against the app's own route list: a new write route without an
// audit case fails this file.
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  ADMIN_TOKEN,
  adminCall,
  bearer,
  createMerchant,
  createTestApp,
  type TestApp,
} from '../helpers/app.ts';
import {
  addOperator,
  adminWithRoutes,
  auditCount,
  auditRowsOf,
  type ListedAdmin,
  send,
  writeRoutes,
} from '../helpers/operators.ts';
import { addStock, redeem, uniqueCode } from '../helpers/redeem.ts';

let t: TestApp;
let admin: ListedAdmin;
let alice: string;
beforeAll(async () => {
  // Private targets: the redelivery case registers a webhook on this machine (it is only queued).
  t = await createTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
  admin = await adminWithRoutes(t);
  alice = (await addOperator(admin.app, 'alice', 'admin')).token;
});
afterAll(async () => {
  await admin.app.close();
  await t.close();
});

const as = (method: string, url: string, payload?: unknown) => send(admin.app, alice, method, url, payload);

/** A job with one quarantined stock code at position 0 (the sandbox's TIMEOUT). */
async function quarantinedJob(customerId: number, key: string): Promise<string> {
  await addStock(t, customerId, 'test', '60', [uniqueCode('TIMEOUT')]);
  const r = await redeem(t, key, { player_id: '5123456789', packs: { '60': 1 } });
  expect(r.json().codes?.[0], r.body).toMatchObject({ disposition: 'quarantined' });
  const listed = await send(admin.app, ADMIN_TOKEN, 'GET', `/admin/v1/quarantine?customer_id=${customerId}`);
  return listed.json().codes[0].job_id as string;
}

/** An event of an ended async job of a merchant with a webhook registered (for a redelivery). */
async function eventOf(m: { customerId: number; key: string }): Promise<string> {
  const hook = await t.api.inject({
    method: 'POST',
    url: '/v1/webhook',
    headers: { ...bearer(m.key), 'content-type': 'application/json' },
    payload: { url: 'https://127.0.0.1:9/hook' },
  });
  expect(hook.statusCode, hook.body).toBe(200);
  const res = await redeem(t, m.key, { player_id: '5123456789', codes: [uniqueCode()], async: true });
  expect(res.statusCode, res.body).toBe(202);
  for (let i = 0; i < 400; i++) {
    const listed = await send(
      admin.app,
      ADMIN_TOKEN,
      'GET',
      `/admin/v1/customers/${m.customerId}/events?mode=test`,
    );
    const events = listed.json().events as { id: string }[];
    if (events.length > 0) return events[0]!.id;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('no event was written');
}

interface Case {
  /** A successful call and what its audit row must say. */
  ok(): Promise<{ res: LightMyRequestResponse; action: string; customer: number | null; status?: number }>;
  /** Refused calls (400, 403, 404, 409): none may leave a row. */
  refused(): Promise<LightMyRequestResponse[]>;
}

const merchant = () => createMerchant(t, { topup: { test: 5 } });

// Routes that change state without an audit row of their own, and why.
const NOT_AUDITED: Record<string, string> = {
  // The chat bot's write routes need a bot and a person in a chat (the Bot API stand-in): their
  // audit rows (bot.link, bot.unbind, wallet.topup, topup.reject) are checked in
  // test/bot/bot-links.test.ts, test/bot/bot-wallet.test.ts and test/cli/cli-bot.test.ts.
  'POST /admin/v1/customers/:id/bot-links': 'bot.link, in test/bot/bot-links.test.ts',
  'POST /admin/v1/bot-users/:id/unbind': 'bot.unbind, in test/bot/bot-links.test.ts',
  'POST /admin/v1/topup-requests/:id/approve': 'wallet.topup, in test/bot/bot-wallet.test.ts',
  'POST /admin/v1/topup-requests/:id/reject': 'topup.reject, in test/bot/bot-wallet.test.ts',
};

const CASES: Record<string, Case> = {
  'POST /admin/v1/customers': {
    ok: async () => {
      const res = await as('POST', '/admin/v1/customers', { name: 'Audited' });
      return { res, action: 'customer.create', customer: res.json().customer_id, status: 201 };
    },
    refused: async () => [await as('POST', '/admin/v1/customers', { name: '' })],
  },
  'POST /admin/v1/customers/:id/disable': {
    ok: async () => {
      const m = await merchant();
      return {
        res: await as('POST', `/admin/v1/customers/${m.customerId}/disable`),
        action: 'customer.disable',
        customer: m.customerId,
      };
    },
    refused: async () => [await as('POST', '/admin/v1/customers/8000000000000/disable')],
  },
  'POST /admin/v1/customers/:id/enable': {
    ok: async () => {
      const m = await merchant();
      // Disabled by root first: only alice's enable is counted.
      await adminCall(t, 'POST', `/admin/v1/customers/${m.customerId}/disable`);
      return {
        res: await as('POST', `/admin/v1/customers/${m.customerId}/enable`),
        action: 'customer.enable',
        customer: m.customerId,
      };
    },
    refused: async () => [await as('POST', '/admin/v1/customers/8000000000000/enable')],
  },
  'PUT /admin/v1/customers/:id/plan': {
    ok: async () => {
      const m = await merchant();
      const plan = { label: 'gold', daily_limit: 5, per_request_usd: '0.5', overage: false, active: true };
      return {
        res: await as('PUT', `/admin/v1/customers/${m.customerId}/plan`, plan),
        action: 'plan.set',
        customer: m.customerId,
      };
    },
    refused: async () => {
      const m = await merchant();
      return [
        await as('PUT', `/admin/v1/customers/${m.customerId}/plan`, { label: 'x' }),
        await as('PUT', '/admin/v1/customers/8000000000000/plan', { label: 'x' }),
      ];
    },
  },
  'DELETE /admin/v1/customers/:id/plan': {
    ok: async () => {
      const m = await merchant();
      return {
        res: await as('DELETE', `/admin/v1/customers/${m.customerId}/plan`),
        action: 'plan.delete',
        customer: m.customerId,
      };
    },
    refused: async () => [await as('DELETE', '/admin/v1/customers/8000000000000/plan')],
  },
  'PUT /admin/v1/customers/:id/subscription': {
    ok: async () => {
      const m = await merchant();
      const body = { required: true, expires_at: null };
      return {
        res: await as('PUT', `/admin/v1/customers/${m.customerId}/subscription`, body),
        action: 'subscription.set',
        customer: m.customerId,
      };
    },
    refused: async () => [
      await as('PUT', '/admin/v1/customers/8000000000000/subscription', { required: true, expires_at: null }),
    ],
  },
  'POST /admin/v1/customers/:id/keys': {
    ok: async () => {
      const m = await merchant();
      const res = await as('POST', `/admin/v1/customers/${m.customerId}/keys`, { mode: 'test' });
      return { res, action: 'key.issue', customer: m.customerId, status: 201 };
    },
    refused: async () => [await as('POST', '/admin/v1/customers/8000000000000/keys', { mode: 'test' })],
  },
  'POST /admin/v1/keys/:keyId/revoke': {
    ok: async () => {
      const m = await merchant();
      return {
        res: await as('POST', `/admin/v1/keys/${m.keyId}/revoke`),
        action: 'key.revoke',
        customer: m.customerId,
      };
    },
    refused: async () => [await as('POST', '/admin/v1/keys/key_nothing/revoke')],
  },
  'POST /admin/v1/keys/:keyId/reroll': {
    ok: async () => {
      const m = await merchant();
      const res = await as('POST', `/admin/v1/keys/${m.keyId}/reroll`, { grace_seconds: 60 });
      return { res, action: 'key.reroll', customer: m.customerId, status: 201 };
    },
    refused: async () => {
      const m = await merchant();
      await send(admin.app, ADMIN_TOKEN, 'POST', `/admin/v1/keys/${m.keyId}/revoke`);
      return [
        await as('POST', `/admin/v1/keys/${m.keyId}/reroll`, { grace_seconds: 0 }),
        await as('POST', `/admin/v1/keys/${m.keyId}/reroll`, { grace_seconds: -1 }),
        await as('POST', '/admin/v1/keys/key_nothing/reroll', { grace_seconds: 0 }),
      ];
    },
  },
  'POST /admin/v1/customers/:id/wallet/topup': {
    ok: async () => {
      const m = await merchant();
      const res = await as('POST', `/admin/v1/customers/${m.customerId}/wallet/topup`, {
        mode: 'live',
        usd: 3,
      });
      return { res, action: 'wallet.topup', customer: m.customerId };
    },
    refused: async () => {
      const m = await merchant();
      return [
        await as('POST', `/admin/v1/customers/${m.customerId}/wallet/topup`, { mode: 'live', usd: 0 }),
        await as('POST', '/admin/v1/customers/8000000000000/wallet/topup', { mode: 'live', usd: 1 }),
      ];
    },
  },
  'POST /admin/v1/customers/:id/wallet/adjust': {
    ok: async () => {
      const m = await merchant();
      const body = { mode: 'test', usd: '-1.5', reason: 'double credit' };
      return {
        res: await as('POST', `/admin/v1/customers/${m.customerId}/wallet/adjust`, body),
        action: 'wallet.adjust',
        customer: m.customerId,
      };
    },
    refused: async () => {
      const m = await merchant();
      return [
        await as('POST', `/admin/v1/customers/${m.customerId}/wallet/adjust`, {
          mode: 'test',
          usd: -6,
          reason: 'too much',
        }),
        await as('POST', `/admin/v1/customers/${m.customerId}/wallet/adjust`, { mode: 'test', usd: 1 }),
      ];
    },
  },
  'POST /admin/v1/customers/:id/stock': {
    ok: async () => {
      const m = await merchant();
      const body = { mode: 'test', category: '60', codes: [uniqueCode(), 'bad code!'] };
      return {
        res: await as('POST', `/admin/v1/customers/${m.customerId}/stock`, body),
        action: 'stock.import',
        customer: m.customerId,
      };
    },
    refused: async () => [
      await as('POST', '/admin/v1/customers/8000000000000/stock', {
        mode: 'test',
        category: '60',
        codes: [],
      }),
    ],
  },
  'POST /admin/v1/jobs/:jobId/codes/:position/settle': {
    ok: async () => {
      const m = await merchant();
      const job = await quarantinedJob(m.customerId, m.key);
      const res = await as('POST', `/admin/v1/jobs/${job}/codes/0/settle`, { outcome: 'unused' });
      return { res, action: 'quarantine.settle', customer: m.customerId };
    },
    refused: async () => [
      await as('POST', '/admin/v1/jobs/job_nothing/codes/0/settle', { outcome: 'unused' }),
      await as('POST', '/admin/v1/jobs/job_nothing/codes/0/settle', { outcome: 'maybe' }),
    ],
  },
  // The status check run now: each code it settles is audited as the operator's, in the
  // settlement's transaction; a check that settles nothing changed nothing.
  'POST /admin/v1/quarantine/check': {
    ok: async () => {
      // Whatever earlier cases left quarantined is settled first, by root.
      await send(admin.app, ADMIN_TOKEN, 'POST', '/admin/v1/quarantine/check');
      const m = await merchant();
      const job = await quarantinedJob(m.customerId, m.key);
      const res = await as('POST', '/admin/v1/quarantine/check');
      expect(res.json()).toMatchObject({ checked: 1, unused: 1 });
      const rows = await auditRowsOf(t, res);
      expect(rows[0]?.details).toEqual({
        job_id: job,
        position: 0,
        mode: 'test',
        outcome: 'unused',
        by: 'check',
      });
      expect(rows[0]?.target).toBe(job);
      return { res, action: 'quarantine.settle', customer: m.customerId };
    },
    refused: async () => [await as('POST', '/admin/v1/quarantine/check', { all: true })],
  },
  'POST /admin/v1/events/:id/redeliver': {
    ok: async () => {
      const m = await merchant();
      const id = await eventOf(m);
      const res = await as('POST', `/admin/v1/events/${id}/redeliver`);
      return { res, action: 'event.redeliver', customer: m.customerId, status: 202 };
    },
    refused: async () => [await as('POST', '/admin/v1/events/evt_nothing0000000000000000/redeliver')],
  },
  'DELETE /admin/v1/customers/:id/webhooks/:mode': {
    ok: async () => {
      const m = await merchant();
      const hook = await t.api.inject({
        method: 'POST',
        url: '/v1/webhook',
        headers: { ...bearer(m.key), 'content-type': 'application/json' },
        payload: { url: 'https://127.0.0.1:9/hook?token=secret' },
      });
      expect(hook.statusCode, hook.body).toBe(200);
      const res = await as('DELETE', `/admin/v1/customers/${m.customerId}/webhooks/test`);
      const rows = await auditRowsOf(t, res);
      // The URL as the console shows it: query values masked.
      expect(rows[0]?.details).toEqual({ mode: 'test', url: 'https://127.0.0.1:9/hook?token=***' });
      expect(rows[0]?.target).toBe('test');
      return { res, action: 'webhook.remove', customer: m.customerId };
    },
    refused: async () => {
      const m = await merchant();
      return [
        // Nothing registered, an unknown customer, a mode that is not one.
        await as('DELETE', `/admin/v1/customers/${m.customerId}/webhooks/test`),
        await as('DELETE', '/admin/v1/customers/8000000000000/webhooks/test'),
        await as('DELETE', `/admin/v1/customers/${m.customerId}/webhooks/staging`),
      ];
    },
  },
  'POST /admin/v1/encryption/rotate': {
    ok: async () => ({
      res: await as('POST', '/admin/v1/encryption/rotate'),
      action: 'encryption.rotate',
      customer: null,
      status: 202,
    }),
    refused: async () => [],
  },
  'POST /admin/v1/operators': {
    ok: async () => {
      const res = await as('POST', '/admin/v1/operators', {
        name: `op-${Math.random().toString(36).slice(2)}`,
        role: 'viewer',
      });
      return { res, action: 'operator.create', customer: null, status: 201 };
    },
    refused: async () => [
      await as('POST', '/admin/v1/operators', { name: 'alice', role: 'viewer' }),
      await as('POST', '/admin/v1/operators', { name: 'no spaces', role: 'viewer' }),
    ],
  },
  'POST /admin/v1/operators/:id/revoke': {
    ok: async () => {
      const op = await addOperator(admin.app, `gone-${Math.random().toString(36).slice(2)}`, 'viewer');
      return {
        res: await as('POST', `/admin/v1/operators/${op.operator_id}/revoke`),
        action: 'operator.revoke',
        customer: null,
      };
    },
    refused: async () => [
      await as('POST', '/admin/v1/operators/op_root/revoke'),
      await as('POST', '/admin/v1/operators/op_nothing/revoke'),
    ],
  },
};

describe('every admin write leaves exactly one audit row', () => {
  test('the table covers every write route of the admin app', () => {
    const routes = writeRoutes(admin).filter((r) => !(r in NOT_AUDITED));
    expect(routes).toEqual(Object.keys(CASES).sort());
  });

  test.each(Object.keys(CASES))('%s', async (route) => {
    const c = CASES[route]!;
    // Fixtures are made by root; alice makes only the call under test.
    const before = await auditCount(t, 'alice');
    const { res, action, customer, status } = await c.ok();
    expect(res.statusCode, res.body).toBe(status ?? 200);
    expect(await auditCount(t, 'alice')).toBe(before + 1);
    const rows = await auditRowsOf(t, res);
    expect(rows).toEqual([
      {
        actor: 'alice',
        action,
        customer_id: customer,
        target: expect.any(String),
        request_id: res.headers['x-request-id'],
        ip: '127.0.0.1',
        details: expect.any(Object),
      },
    ]);
    // Never a key, token or code in details.
    const details = JSON.stringify(rows[0]!.details);
    expect(details).not.toMatch(/rk_(live|test)_[A-Za-z0-9]{32}|adm_[A-Za-z0-9]{32}/);
    if (res.json().key) expect(details).not.toContain(res.json().key);
    if (res.json().token) expect(details).not.toContain(res.json().token);

    const refusedBefore = await auditCount(t, 'alice');
    const refused = await c.refused();
    for (const r of refused) {
      expect([400, 402, 403, 404, 409], r.body).toContain(r.statusCode);
      expect(await auditRowsOf(t, r)).toEqual([]);
    }
    // The refused calls' fixtures are root's; alice's refused calls left nothing.
    expect(await auditCount(t, 'alice')).toBe(refusedBefore);
  });
});

describe('the audit table and its list', () => {
  test('the table refuses update, delete and truncate, whoever asks', async () => {
    await as('POST', '/admin/v1/customers', { name: 'Kept' });
    for (const sql of [
      "update audit_events set actor = 'mallory'",
      'delete from audit_events',
      'truncate audit_events',
    ]) {
      await expect(t.ctx.db.query(sql), sql).rejects.toThrow(/append-only/);
    }
    expect(await auditCount(t, 'mallory')).toBe(0);
  });

  test('plan.set holds the plan before and after; money rows the amount and mode', async () => {
    const m = await merchant();
    const plan = { label: 'gold', daily_limit: null, per_request_usd: '0.25', overage: true, active: true };
    const res = await as('PUT', `/admin/v1/customers/${m.customerId}/plan`, plan);
    expect((await auditRowsOf(t, res))[0]!.details).toEqual({
      before: { label: 'standard', daily_limit: 100, per_request_usd: 0.01, overage: true, active: true },
      after: { label: 'gold', daily_limit: null, per_request_usd: 0.25, overage: true, active: true },
    });
    const top = await as('POST', `/admin/v1/customers/${m.customerId}/wallet/topup`, {
      mode: 'live',
      usd: '2.5',
      note: 'n',
    });
    expect((await auditRowsOf(t, top))[0]!.details).toEqual({
      mode: 'live',
      amount_usd: 2.5,
      note: 'n',
      idempotency_key: expect.any(String),
    });
  });

  test('GET /admin/v1/audit filters by customer, actor and action, newest first, a page at a time', async () => {
    const m = await merchant();
    const calls = [];
    for (const usd of [1, 2, 3])
      calls.push(await as('POST', `/admin/v1/customers/${m.customerId}/wallet/topup`, { mode: 'test', usd }));
    await as('POST', `/admin/v1/customers/${m.customerId}/disable`);
    const url = `/admin/v1/audit?customer_id=${m.customerId}&actor=alice&action=wallet.topup&limit=2`;
    const first = await send(admin.app, ADMIN_TOKEN, 'GET', url);
    expect(first.statusCode).toBe(200);
    const body = first.json();
    expect(body).toEqual({
      ok: true,
      request_id: first.headers['x-request-id'],
      events: [
        {
          id: expect.stringMatching(/^aud_[A-Za-z0-9]{24}$/),
          at: '2026-11-22T09:00:00Z',
          actor: 'alice',
          action: 'wallet.topup',
          customer_id: m.customerId,
          target: expect.any(String),
          request_id: calls[2]!.headers['x-request-id'],
          ip: '127.0.0.1',
          details: { mode: 'test', amount_usd: 3, note: '', idempotency_key: expect.any(String) },
        },
        expect.objectContaining({ request_id: calls[1]!.headers['x-request-id'] }),
      ],
      next_cursor: expect.any(String),
    });
    const rest = (await send(admin.app, ADMIN_TOKEN, 'GET', `${url}&cursor=${body.next_cursor}`)).json();
    expect(rest.events).toEqual([expect.objectContaining({ request_id: calls[0]!.headers['x-request-id'] })]);
    expect(rest.next_cursor).toBeNull();
    const all = (
      await send(admin.app, ADMIN_TOKEN, 'GET', `/admin/v1/audit?customer_id=${m.customerId}`)
    ).json();
    expect(all.events.map((e: { action: string }) => e.action)).toEqual([
      'customer.disable',
      'wallet.topup',
      'wallet.topup',
      'wallet.topup',
      'key.issue',
      'wallet.topup',
      'plan.set',
      'customer.create',
    ]);
  });

  test.each([
    'limit=0',
    'limit=501',
    'action=wallet.steal',
    'actor=no%20spaces',
    'customer_id=abc',
    'cursor=xyz',
    'other=1',
  ])('GET /admin/v1/audit?%s is 400 bad_request', async (query) => {
    const res = await send(admin.app, ADMIN_TOKEN, 'GET', `/admin/v1/audit?${query}`);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().error_code).toBe('bad_request');
  });
});
