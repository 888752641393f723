import { randomBytes } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { codeHash } from '../../src/core/crypto/code-crypto.ts';
import { CATALOG_UC } from '../../src/core/stock/catalog.ts';
import {
  importStock,
  type ReservedCode,
  reservedStockIds,
  reserveForUc,
  reserveStock,
  setStockState,
  stockCode,
  stockCounts,
} from '../../src/core/stock/stock.ts';
import {
  ADMIN_TOKEN,
  adminCall,
  bearer,
  createCustomer,
  createMerchant,
  issueTestKey,
  merchantGet,
  type TestApp,
  useTestApp,
} from '../helpers/app.ts';

let t: TestApp;
useTestApp({}, (app) => {
  t = app;
});

// Codes are unique across every customer and run (PostgreSQL keeps rows between runs).
const run = randomBytes(5).toString('hex').toUpperCase();
let serial = 0;
const newCode = (tag = 'C') => `${tag}-${run}-${String(++serial).padStart(5, '0')}`;
const newCodes = (n: number, tag?: string) => Array.from({ length: n }, () => newCode(tag));

const zeroCategories = CATALOG_UC.map((uc) => ({
  category: String(uc),
  uc,
  available: 0,
  reserved: 0,
  quarantined: 0,
}));

function importCodes(customerId: number, body: Record<string, unknown>, expectStatus = 200) {
  return adminCall<Record<string, unknown>>(
    t,
    'POST',
    `/admin/v1/customers/${customerId}/stock`,
    body,
    expectStatus,
  );
}

const newCustomer = () => createCustomer(t, 'stock test');

describe('POST /admin/v1/customers/{id}/stock', () => {
  test('counts added, duplicates (in the import and in any stock) and rejected; trims codes', async () => {
    const a = await newCustomer();
    const b = await newCustomer();
    const [c1, c2, c3, c4] = newCodes(4);
    const body = await importCodes(a, {
      mode: 'test',
      category: '60',
      codes: [`  ${c1}  `, c2, c1, 'bad code', 'abc', `${c2} `, '', 'X'.repeat(65), c3],
    });
    expect(body).toEqual({
      ok: true,
      request_id: expect.stringMatching(/^req_/),
      added: 3,
      duplicates: 2,
      rejected: 4,
      // Which ones and why, by position, never the code (test/stock/stock-import-issues.test.ts).
      issues: [
        { index: 2, kind: 'duplicate', reason: 'repeats position 0 of this import' },
        { index: 3, kind: 'rejected', reason: 'not a code: 4 to 64 letters, digits or "-"' },
        { index: 4, kind: 'rejected', reason: 'not a code: 4 to 64 letters, digits or "-"' },
        { index: 5, kind: 'duplicate', reason: 'repeats position 1 of this import' },
        { index: 6, kind: 'rejected', reason: 'not a code: 4 to 64 letters, digits or "-"' },
        { index: 7, kind: 'rejected', reason: 'not a code: 4 to 64 letters, digits or "-"' },
      ],
    });

    // Already in stock: another customer, the other mode and another category all count as duplicates.
    expect(await importCodes(b, { mode: 'live', category: '325', codes: [c1, c4] })).toMatchObject({
      added: 1,
      duplicates: 1,
      rejected: 0,
    });
    expect(await importCodes(a, { mode: 'live', category: '60', codes: [c2, c3, c4] })).toMatchObject({
      added: 0,
      duplicates: 3,
    });
    // A code that left the stock (deleted) still cannot come back.
    const row = await t.ctx.db.query<{ id: number; customerId: number }>(
      'select id, customer_id as "customerId" from stock_codes where code_hash = $1',
      [codeHash(t.ctx.codeKey, c3!)],
    );
    await setStockState(t.ctx.db, row.rows[0]!.customerId, [row.rows[0]!.id], 'deleted', t.clock);
    expect(await importCodes(a, { mode: 'test', category: '60', codes: [c3] })).toMatchObject({
      added: 0,
      duplicates: 1,
    });

    expect(await importCodes(a, { mode: 'test', category: '60', codes: [] })).toMatchObject({
      added: 0,
      duplicates: 0,
      rejected: 0,
    });
    const counts = await stockCounts(t.ctx.db, a, 'test');
    expect(counts[0]).toEqual({ category: '60', uc: 60, available: 2, reserved: 0, quarantined: 0 });
  });

  test('rows hold no plaintext code, and the logs never show one', async () => {
    const customerId = await newCustomer();
    const codes = newCodes(3, 'SECRETPLAINTEXT');
    await importCodes(customerId, { mode: 'test', category: '660', codes });
    const rows = await t.ctx.db.query<Record<string, unknown>>(
      'select * from stock_codes where customer_id = $1',
      [customerId],
    );
    expect(rows.rows).toHaveLength(3);
    for (const row of rows.rows) {
      for (const value of Object.values(row)) {
        const text = value instanceof Date ? value.toISOString() : String(value);
        for (const code of codes) expect(text).not.toContain(code);
      }
      expect(row.code_hash).toMatch(/^[0-9a-f]{64}$/);
    }
    const logs = t.logs.join('');
    for (const code of codes) {
      expect(logs).not.toContain(code);
      expect(logs).not.toContain(code.slice(0, -4));
    }
  });

  test('concurrent imports of the same codes add each code once', async () => {
    const customerId = await newCustomer();
    const codes = newCodes(40);
    const results = await Promise.all(
      Array.from({ length: 5 }, () =>
        importStock(t.ctx.db, t.ctx.codeKey, { customerId, mode: 'live', category: '1800', codes }, t.clock),
      ),
    );
    expect(results.reduce((n, r) => n + r.added, 0)).toBe(40);
    expect(results.reduce((n, r) => n + r.duplicates, 0)).toBe(4 * 40);
    expect((await stockCounts(t.ctx.db, customerId, 'live'))[3]!.available).toBe(40);
  });

  test('concurrent imports of the same codes for different customers add each code once, to one of them', async () => {
    // No unique index spans customers (a database sharded by customer cannot keep one): the
    // import's lock on each code's hash and its look across every stock do.
    const customers = await Promise.all(Array.from({ length: 5 }, () => newCustomer()));
    const codes = newCodes(40);
    const results = await Promise.all(
      customers.map((customerId) =>
        t.ctx.db.transaction((tx) =>
          importStock(tx, t.ctx.codeKey, { customerId, mode: 'live', category: '1800', codes }, t.clock),
        ),
      ),
    );
    expect(results.reduce((n, r) => n + r.added, 0)).toBe(40);
    expect(results.reduce((n, r) => n + r.duplicates, 0)).toBe(4 * 40);
    let available = 0;
    for (const customerId of customers)
      available += (await stockCounts(t.ctx.db, customerId, 'live'))[3]!.available;
    expect(available).toBe(40);
  });

  test('invalid bodies are 400 bad_request and change nothing', async () => {
    const customerId = await newCustomer();
    const cases: [unknown, RegExp][] = [
      [{ mode: 'test', category: '61', codes: [newCode()] }, /^category: /],
      [{ mode: 'test', category: 60, codes: [newCode()] }, /^category: /],
      [{ mode: 'prod', category: '60', codes: [newCode()] }, /^mode: /],
      [{ mode: 'test', category: '60', codes: newCode() }, /^codes: /],
      [{ mode: 'test', category: '60', codes: [newCode(), 7] }, /^codes\.1: /],
      [{ mode: 'test', category: '60', codes: newCodes(10_001) }, /^codes: /],
      [{ mode: 'test', category: '60' }, /^codes: /],
      [{ mode: 'test', category: '60', codes: [newCode()], extra: 1 }, /extra|body/],
      [[], /^body: /],
    ];
    for (const [payload, message] of cases) {
      const res = await t.admin.inject({
        method: 'POST',
        url: `/admin/v1/customers/${customerId}/stock`,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        payload: payload as object,
      });
      expect(res.statusCode, JSON.stringify(payload).slice(0, 80)).toBe(400);
      expect(res.json()).toEqual({
        ok: false,
        error_code: 'bad_request',
        message: expect.stringMatching(message),
        request_id: res.headers['x-request-id'],
      });
    }
    expect(await stockCounts(t.ctx.db, customerId, 'test')).toEqual(zeroCategories);
  });

  test('10,000 codes are accepted in one import', async () => {
    const customerId = await newCustomer();
    const body = await importCodes(customerId, { mode: 'test', category: '8100', codes: newCodes(10_000) });
    expect(body).toMatchObject({ added: 10_000, duplicates: 0, rejected: 0 });
  });

  test('unknown customer is 404, missing admin token is 401', async () => {
    for (const id of ['999999999', 'abc']) {
      const res = await t.admin.inject({
        method: 'POST',
        url: `/admin/v1/customers/${id}/stock`,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        payload: { mode: 'test', category: '60', codes: [newCode()] },
      });
      expect(res.statusCode).toBe(404);
      expect(res.json()).toMatchObject({ ok: false, error_code: 'not_found' });
    }
    const customerId = await newCustomer();
    const res = await t.admin.inject({
      method: 'POST',
      url: `/admin/v1/customers/${customerId}/stock`,
      headers: { authorization: 'Bearer wrong' },
      payload: { mode: 'test', category: '60', codes: [newCode()] },
    });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toMatchObject({ ok: false, error_code: 'unauthorized' });
  });

  test('the admin customer view shows stock counts per mode', async () => {
    const customerId = await newCustomer();
    await importCodes(customerId, { mode: 'live', category: '325', codes: newCodes(2) });
    const view = await adminCall<{ stock: unknown }>(t, 'GET', `/admin/v1/customers/${customerId}`);
    expect(view.stock).toEqual({
      live: {
        categories: zeroCategories.map((c) => (c.category === '325' ? { ...c, available: 2 } : c)),
        total_available: 2,
        total_uc_available: 650,
      },
      test: { categories: zeroCategories, total_available: 0, total_uc_available: 0 },
    });
  });
});

describe('GET /v1/stock', () => {
  test('every category with zero counts for a new merchant', async () => {
    const m = await createMerchant(t);
    const res = await merchantGet(t, '/v1/stock', m.key);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      ok: true,
      request_id: res.headers['x-request-id'],
      mode: 'test',
      categories: zeroCategories,
      total_available: 0,
      total_uc_available: 0,
    });
    expect(res.headers['svc-cost']).toBe('0');
    expect(res.headers['svc-quota-used']).toBe('0');
  });

  test('counts available, reserved and quarantined of the key mode only', async () => {
    const m = await createMerchant(t);
    await importCodes(m.customerId, { mode: 'test', category: '60', codes: newCodes(5) });
    await importCodes(m.customerId, { mode: 'test', category: '3850', codes: newCodes(2) });
    await importCodes(m.customerId, { mode: 'live', category: '8100', codes: newCodes(3) });
    const reserved = await t.ctx.db.transaction((tx) =>
      reserveStock(
        tx,
        t.ctx.codeKey,
        {
          customerId: m.customerId,
          mode: 'test',
          picks: [{ category: '60', count: 2 }],
          reservedBy: `job_x_${run}`,
        },
        t.clock,
      ),
    );
    await setStockState(t.ctx.db, m.customerId, [reserved![0]!.stockId], 'quarantined', t.clock);

    const res = await merchantGet(t, '/v1/stock', m.key);
    expect(res.json()).toMatchObject({
      mode: 'test',
      categories: zeroCategories.map((c) =>
        c.category === '60'
          ? { ...c, available: 3, reserved: 1, quarantined: 1 }
          : c.category === '3850'
            ? { ...c, available: 2 }
            : c,
      ),
      total_available: 5,
      total_uc_available: 3 * 60 + 2 * 3850,
    });

    const live = await issueTestKey(t, m.customerId, { mode: 'live' });
    const liveRes = await merchantGet(t, '/v1/stock', live.key);
    expect(liveRes.json()).toMatchObject({
      mode: 'live',
      categories: zeroCategories.map((c) => (c.category === '8100' ? { ...c, available: 3 } : c)),
      total_available: 3,
      total_uc_available: 24_300,
    });
  });

  test('a test import is not visible to a live key', async () => {
    const m = await createMerchant(t, { key: { mode: 'live' } });
    await importCodes(m.customerId, { mode: 'test', category: '60', codes: newCodes(4) });
    const res = await merchantGet(t, '/v1/stock', m.key);
    expect(res.json()).toMatchObject({ mode: 'live', categories: zeroCategories, total_available: 0 });
  });

  test('needs the read scope, and a key', async () => {
    const m = await createMerchant(t, { key: { scopes: ['redeem'] } });
    const res = await merchantGet(t, '/v1/stock', m.key);
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual({
      ok: false,
      error_code: 'scope_denied',
      message: expect.any(String),
      request_id: res.headers['x-request-id'],
    });
    const anon = await t.api.inject({ method: 'GET', url: '/v1/stock' });
    expect(anon.statusCode).toBe(401);
    expect(anon.json()).toMatchObject({ ok: false, error_code: 'unauthorized' });
    const post = await t.api.inject({ method: 'POST', url: '/v1/stock', headers: bearer(m.key) });
    expect(post.statusCode).toBe(405);
  });
});

describe('reserving stock', () => {
  async function stocked(spec: Record<string, number>, mode: 'live' | 'test' = 'test') {
    const customerId = await newCustomer();
    const codes: Record<string, string[]> = {};
    for (const [category, n] of Object.entries(spec)) {
      codes[category] = newCodes(n);
      await importStock(
        t.ctx.db,
        t.ctx.codeKey,
        { customerId, mode, category, codes: codes[category]! },
        t.clock,
      );
    }
    return { customerId, codes };
  }

  test('picks in the order given, oldest codes first, decrypted', async () => {
    const { customerId, codes } = await stocked({ '60': 3, '660': 2 });
    const got = await t.ctx.db.transaction((tx) =>
      reserveStock(
        tx,
        t.ctx.codeKey,
        {
          customerId,
          mode: 'test',
          picks: [
            { category: '660', count: 1 },
            { category: '60', count: 2 },
          ],
          reservedBy: `job_order_${run}`,
        },
        t.clock,
      ),
    );
    expect(got!.map(({ code, category, uc }) => ({ code, category, uc }))).toEqual([
      { code: codes['660']![0], category: '660', uc: 660 },
      { code: codes['60']![0], category: '60', uc: 60 },
      { code: codes['60']![1], category: '60', uc: 60 },
    ]);
    expect(await reservedStockIds(t.ctx.db, `job_order_${run}`)).toEqual(
      got!.map((r) => r.stockId).sort((a, b) => a - b),
    );
    const one = await stockCode(t.ctx.db, t.ctx.codeKey, got![0]!.stockId);
    expect(one).toMatchObject({ code: codes['660']![0], state: 'reserved', reservedBy: `job_order_${run}` });
  });

  test('not enough in one category: null, and nothing is reserved', async () => {
    const { customerId } = await stocked({ '60': 3, '325': 1 });
    const got = await t.ctx.db.transaction((tx) =>
      reserveStock(
        tx,
        t.ctx.codeKey,
        {
          customerId,
          mode: 'test',
          picks: [
            { category: '60', count: 2 },
            { category: '325', count: 2 },
          ],
          reservedBy: `job_short_${run}`,
        },
        t.clock,
      ),
    );
    expect(got).toBeNull();
    // The other mode's stock never counts.
    const otherMode = await t.ctx.db.transaction((tx) =>
      reserveStock(
        tx,
        t.ctx.codeKey,
        { customerId, mode: 'live', picks: [{ category: '60', count: 1 }], reservedBy: `job_live_${run}` },
        t.clock,
      ),
    );
    expect(otherMode).toBeNull();
    const counts = await stockCounts(t.ctx.db, customerId, 'test');
    expect(counts.slice(0, 2).map((c) => [c.available, c.reserved])).toEqual([
      [3, 0],
      [1, 0],
    ]);
  });

  test('setStockState: available returns a code and clears reserved_by; consumed leaves the stock', async () => {
    const { customerId } = await stocked({ '60': 2 });
    const got = (await t.ctx.db.transaction((tx) =>
      reserveStock(
        tx,
        t.ctx.codeKey,
        { customerId, mode: 'test', picks: [{ category: '60', count: 2 }], reservedBy: `job_state_${run}` },
        t.clock,
      ),
    ))!;
    expect(await setStockState(t.ctx.db, customerId, [got[0]!.stockId], 'available', t.clock)).toBe(1);
    expect(await setStockState(t.ctx.db, customerId, [got[1]!.stockId], 'consumed', t.clock)).toBe(1);
    expect(await setStockState(t.ctx.db, customerId, [], 'consumed', t.clock)).toBe(0);
    expect(await stockCode(t.ctx.db, t.ctx.codeKey, got[0]!.stockId)).toMatchObject({
      state: 'available',
      reservedBy: null,
    });
    expect(await stockCode(t.ctx.db, t.ctx.codeKey, got[1]!.stockId)).toMatchObject({
      state: 'consumed',
      reservedBy: `job_state_${run}`,
    });
    expect((await stockCounts(t.ctx.db, customerId, 'test'))[0]).toMatchObject({ available: 1, reserved: 0 });
  });

  test('reserveForUc takes the fewest codes, largest first, or null', async () => {
    const { customerId, codes } = await stocked({ '60': 5, '325': 2, '1800': 1 });
    const take = (uc: number, reservedBy: string) =>
      t.ctx.db.transaction((tx) =>
        reserveForUc(tx, t.ctx.codeKey, { customerId, mode: 'test', uc, reservedBy }, t.clock),
      );
    const got = await take(1800 + 325 + 60, `job_uc1_${run}`);
    expect(got!.map((r) => r.code)).toEqual([codes['1800']![0], codes['325']![0], codes['60']![0]]);
    expect(await take(1800, `job_uc2_${run}`)).toBeNull(); // the only 1800 is taken
    expect(await take(61, `job_uc3_${run}`)).toBeNull();
    expect((await take(240, `job_uc4_${run}`))!.map((r) => r.category)).toEqual(['60', '60', '60', '60']);
    expect(await take(60, `job_uc5_${run}`)).toBeNull();
  });

  test('10 concurrent transactions over 10 codes hand out every code exactly once', async () => {
    const { customerId } = await stocked({ '60': 10 });
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        t.ctx.db.transaction((tx) =>
          reserveStock(
            tx,
            t.ctx.codeKey,
            {
              customerId,
              mode: 'test',
              picks: [{ category: '60', count: 1 }],
              reservedBy: `job_c${i}_${run}`,
            },
            t.clock,
          ),
        ),
      ),
    );
    const taken = results.map((r) => {
      expect(r).toHaveLength(1);
      return r![0]!;
    });
    expect(new Set(taken.map((r) => r.stockId)).size).toBe(10);
    expect(new Set(taken.map((r) => r.code)).size).toBe(10);
    const rows = await t.ctx.db.query<{ state: string; reservedBy: string }>(
      `select state, reserved_by as "reservedBy" from stock_codes where customer_id = $1 order by id`,
      [customerId],
    );
    expect(rows.rows.every((r) => r.state === 'reserved')).toBe(true);
    expect(new Set(rows.rows.map((r) => r.reservedBy)).size).toBe(10);
    // An eleventh finds nothing.
    const more = await t.ctx.db.transaction((tx) =>
      reserveStock(
        tx,
        t.ctx.codeKey,
        { customerId, mode: 'test', picks: [{ category: '60', count: 1 }], reservedBy: `job_c10_${run}` },
        t.clock,
      ),
    );
    expect(more).toBeNull();
  });

  test('concurrent uc reservations never share a code and take all that can be made', async () => {
    const { customerId } = await stocked({ '60': 6, '325': 3 });
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        t.ctx.db.transaction((tx) =>
          reserveForUc(
            tx,
            t.ctx.codeKey,
            { customerId, mode: 'test', uc: 385, reservedBy: `job_u${i}_${run}` },
            t.clock,
          ),
        ),
      ),
    );
    const got = results.filter((r): r is ReservedCode[] => r !== null);
    expect(got).toHaveLength(3);
    const ids = got.flat().map((r) => r.stockId);
    expect(new Set(ids).size).toBe(6);
    for (const r of got) expect(r.map((c) => c.uc)).toEqual([325, 60]);
  });
});
