// CSV exports of the admin lists: GET /admin/v1/jobs, /customers/{id}/ledger and
// /audit with format=csv or Accept: text/csv answer every row the list's filters select as an
// RFC 4180 attachment: a header row, the filters applied, a value with a comma or a quote
// quoted, text that a spreadsheet would run as a formula made inert (a leading '), and numbers
// (a negative amount included) as they are. Real HTTP through inject, the real database.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { formulaSafe } from '../../src/core/csv-export.ts';
import {
  ADMIN_TOKEN,
  adminGet,
  createMerchant,
  createTestApp,
  type Merchant,
  type TestApp,
} from '../helpers/app.ts';
import { redeem, uniqueCode } from '../helpers/redeem.ts';

/** RFC 4180 records (CRLF ends, quoted cells with doubled quotes): the test's own reader. */
function parse(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      record.push(cell);
      cell = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      record.push(cell);
      records.push(record);
      record = [];
      cell = '';
      i++;
    } else cell += c;
  }
  return records;
}

let t: TestApp;
let a: Merchant;
let b: Merchant;
const NASTY = '=HYPERLINK("http://x"), "quoted"';

beforeAll(async () => {
  t = await createTestApp();
  a = await createMerchant(t, { topup: { test: 5 } });
  b = await createMerchant(t, { topup: { test: 5 } });
  const sent = await redeem(t, a.key, { player_id: '5123456789', codes: [uniqueCode()], reference: NASTY });
  expect(sent.statusCode, sent.body).toBe(200);
  expect((await redeem(t, b.key, { player_id: '5123456789', codes: [uniqueCode()] })).statusCode).toBe(200);
  const adjust = await t.admin.inject({
    method: 'POST',
    url: `/admin/v1/customers/${a.customerId}/wallet/adjust`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'idempotency-key': 'csv-adjust' },
    payload: { mode: 'test', usd: '-0.05', reason: '-1, "goodwill"' },
  });
  expect(adjust.statusCode, adjust.body).toBe(200);
});
afterAll(() => t.close());

const get = (url: string, headers: Record<string, string> = {}) => adminGet(t, url, headers);

function csvOf(res: { statusCode: number; body: string; headers: Record<string, unknown> }) {
  expect(res.statusCode, res.body).toBe(200);
  expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
  expect(res.headers['svc-export-truncated']).toBe('false');
  expect(res.body.endsWith('\r\n')).toBe(true);
  return parse(res.body) as string[][];
}

describe('CSV exports', () => {
  test('jobs: the filters applied, the header row, a reference with a comma and quotes, formula-safe', async () => {
    const res = await get(`/admin/v1/jobs?format=csv&customer_id=${a.customerId}`);
    expect(res.headers['content-disposition']).toBe('attachment; filename="jobs.csv"');
    const [header, ...rows] = csvOf(res);
    expect(header!.slice(0, 6)).toEqual([
      'job_id',
      'created_at',
      'finished_at',
      'customer_id',
      'customer_name',
      'mode',
    ]);
    expect(rows).toHaveLength(1);
    const col = (name: string) => rows[0]![header!.indexOf(name)];
    expect(col('customer_id')).toBe(String(a.customerId));
    expect(col('reference')).toBe(`'${NASTY}`);
    expect(col('status')).toBe('completed');
    expect(col('activated')).toBe('1');
    expect(col('async')).toBe('false');
    // The raw text quotes the cell and doubles its quotes (RFC 4180).
    expect(res.body).toContain(`"'=HYPERLINK(""http://x""), ""quoted"""`);

    // Accept: text/csv asks the same; the JSON list is unchanged without either.
    const both = csvOf(await get('/admin/v1/jobs', { accept: 'text/csv' }));
    expect(
      both
        .slice(1)
        .map((r) => r[3])
        .sort(),
    ).toEqual([String(a.customerId), String(b.customerId)].sort());
    expect((await get('/admin/v1/jobs')).json().jobs).toHaveLength(2);
    expect((await get('/admin/v1/jobs?format=xml')).statusCode).toBe(400);
    expect(csvOf(await get('/admin/v1/jobs?format=csv&status=failed'))).toEqual([header]);
  });

  test('ledger: one customer and mode, a negative amount as a number, a note made formula-safe', async () => {
    const res = await get(`/admin/v1/customers/${a.customerId}/ledger?mode=test&format=csv`);
    expect(res.headers['content-disposition']).toBe(`attachment; filename="ledger-${a.customerId}-test.csv"`);
    const [header, ...rows] = csvOf(res);
    expect(header).toEqual([
      'entry_id',
      'at',
      'kind',
      'amount_usd',
      'balance_after_usd',
      'actor',
      'request_id',
      'note',
      'reference',
    ]);
    const pick = (r: string[]) => [r[2], r[3], r[4], r[5], r[7]];
    expect(rows.map(pick)).toEqual([
      // The redeem was within the plan's daily include: no wallet charge.
      ['adjustment', '-0.05', '4.95', 'root', `'-1, "goodwill"`],
      ['topup', '5', '5', 'root', ''],
    ]);
    expect(csvOf(await get(`/admin/v1/customers/${a.customerId}/ledger?mode=live&format=csv`))).toEqual([
      header,
    ]);
  });

  test('audit: filtered by customer and action, details as JSON text', async () => {
    const res = await get(`/admin/v1/audit?customer_id=${a.customerId}&action=wallet.adjust&format=csv`);
    expect(res.headers['content-disposition']).toBe('attachment; filename="audit.csv"');
    const [header, ...rows] = csvOf(res);
    expect(header).toEqual([
      'id',
      'at',
      'actor',
      'action',
      'customer_id',
      'target',
      'request_id',
      'ip',
      'details',
    ]);
    expect(rows).toHaveLength(1);
    expect(rows[0]![3]).toBe('wallet.adjust');
    expect(JSON.parse(rows[0]![8]!)).toMatchObject({
      mode: 'test',
      amount_usd: -0.05,
      reason: '-1, "goodwill"',
    });
    const all = csvOf(await get(`/admin/v1/audit?customer_id=${a.customerId}&format=csv`)).slice(1);
    expect(all.map((r) => r[3])).toEqual([
      'wallet.adjust',
      'key.issue',
      'wallet.topup',
      'plan.set',
      'customer.create',
    ]);
  });

  test('formulaSafe: only text that would start a formula gets the quote', () => {
    expect(['=1+1', '+1', '-1', '@SUM(A1)', '\tx', '\rx', 'plain', '', "'already"].map(formulaSafe)).toEqual([
      "'=1+1",
      "'+1",
      "'-1",
      "'@SUM(A1)",
      "'\tx",
      "'\rx",
      'plain',
      '',
      "'already",
    ]);
  });
});
