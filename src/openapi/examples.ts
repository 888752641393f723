// One request and response example per operation, shown by GET /docs. The test suite checks each
// example response against the document (test/docs/docs.test.ts), so an example cannot drift from
// the shapes the service answers with.

export interface OperationExample {
  /** The request as a client sends it (method, path, headers that matter, body). */
  request: string;
  status: number;
  /** The response body (JSON), or text for a non-JSON answer. */
  response: unknown;
}

const REQ = 'req_4mV9dQ2sKp7LwX1bN8cZ3tYe';
const JOB = 'job_7Hq2LmW9xZ4cV1bN6tR8pK3s';
const EVT = 'evt_2Nc8Vb5Xm1Qw7Ks4Lp9Zt3Hd';
const KEY = 'Authorization: Bearer rk_test_…';

const codes = [
  {
    code: 'AB12CD34EF56GH78',
    category: '60',
    uc: 60,
    status: 'activated',
    error_code: '',
    disposition: 'consumed',
    billed: true,
  },
  {
    code: 'ZX98YW76VU54TS32',
    category: null,
    uc: null,
    status: 'code_used',
    error_code: 'CODE_USED',
    disposition: 'deleted',
    billed: true,
  },
];
const result = {
  ok: true,
  request_id: REQ,
  player_id: '5123456789',
  mode: 'test',
  source: 'codes',
  reference: 'order-1042',
  codes,
  summary: { activated: 1, code_used: 1, invalid_code: 0, bad_player: 0, failed: 0 },
  uc_delivered: 60,
  billed_requests: 2,
  refunded_requests: 0,
};

const event = {
  id: EVT,
  event: 'redeem.completed',
  job_id: JOB,
  mode: 'test',
  created_at: '2026-11-22T09:00:02Z',
  state: 'delivered',
  next_attempt_at: null,
  attempts: [
    { at: '2026-11-22T09:00:02Z', status: 503, error: 'http_status', duration_ms: 41, redelivery: false },
    { at: '2026-11-22T09:00:12Z', status: 200, error: null, duration_ms: 37, redelivery: false },
  ],
};

const day = (date: string, opening: number, topups: number, charged: number) => ({
  date,
  requests_included: charged ? 100 : 0,
  requests_overage: charged ? 20 : 0,
  requests_refunded: charged ? 3 : 0,
  codes: charged
    ? { activated: 110, code_used: 6, invalid_code: 4, bad_player: 1, failed: 2 }
    : { activated: 0, code_used: 0, invalid_code: 0, bad_player: 0, failed: 0 },
  charged_usd: charged,
  topups_usd: topups,
  adjustments_usd: 0,
  opening_balance_usd: opening,
  closing_balance_usd: Math.round((opening + topups - charged) * 1e6) / 1e6,
});

const withoutDate = ({ date: _date, ...rest }: ReturnType<typeof day>) => ({
  ...rest,
  opening_balance_usd: 10,
});

/** By operationId. */
export const EXAMPLES: Record<string, OperationExample> = {
  redeem: {
    request: `POST /v1/redeem\n${KEY}\nIdempotency-Key: order-1042\nContent-Type: application/json\n\n${JSON.stringify(
      { player_id: '5123456789', codes: ['AB12CD34EF56GH78', 'ZX98YW76VU54TS32'], reference: 'order-1042' },
    )}`,
    status: 200,
    response: result,
  },
  getJob: {
    request: `GET /v1/jobs/${JOB}\n${KEY}`,
    status: 200,
    response: {
      ok: true,
      request_id: REQ,
      job_id: JOB,
      status: 'completed',
      created_at: '2026-11-22T09:00:00Z',
      started_at: '2026-11-22T09:00:00Z',
      finished_at: '2026-11-22T09:00:02Z',
      player_id: '5123456789',
      source: 'codes',
      reference: 'order-1042',
      progress: { total: 2, done: 2 },
      result: { ...result, job_id: JOB },
      error: null,
    },
  },
  me: {
    request: `GET /v1/me\n${KEY}`,
    status: 200,
    response: {
      ok: true,
      request_id: REQ,
      customer_id: 42,
      key_prefix: 'rk_test_AbCd',
      scopes: ['redeem', 'read'],
      mode: 'test',
      plan: 'standard',
      plan_active: true,
      quota: { daily_limit: 100, used_today: 12, remaining_today: 88, overage_today: 0 },
      per_request_usd: 0.01,
      balance_usd: 25,
      subscription: { required: false, active: true, expires_at: null, days_left: null },
    },
  },
  stock: {
    request: `GET /v1/stock\n${KEY}`,
    status: 200,
    response: {
      ok: true,
      request_id: REQ,
      mode: 'test',
      categories: [{ category: '60', uc: 60, available: 12, reserved: 1, quarantined: 0 }],
      total_available: 12,
      total_uc_available: 720,
    },
  },
  registerWebhook: {
    request: `POST /v1/webhook\n${KEY}\nContent-Type: application/json\n\n{"url":"https://<your-host>/hooks/redeem"}`,
    status: 200,
    response: {
      ok: true,
      request_id: REQ,
      url: 'https://<your-host>/hooks/redeem',
      secret: 'whsec_5YtR2wQ9pL3mN7bV1cX8zK4jH6gF0dSa',
      note: 'Each delivery carries SVC-Signature …',
    },
  },
  botUpdates: {
    request:
      'POST /bot/updates\nX-Telegram-Bot-Api-Secret-Token: <BOT_WEBHOOK_SECRET>\n\n' +
      '{"update_id": 812345678, "message": {"message_id": 7, "chat": {"id": 1001, "type": "private"}, "text": "/stock"}}',
    status: 200,
    response: { ok: true, request_id: REQ },
  },
  health: {
    request: 'GET /v1/health',
    status: 200,
    response: {
      ok: true,
      request_id: REQ,
      status: 'ok',
      version: '1.0.0',
      time: '2026-11-22T09:00:00Z',
      checks: { database: 'ok' },
    },
  },
  listEvents: {
    request: `GET /v1/events?state=delivered&limit=1\n${KEY}`,
    status: 200,
    response: {
      ok: true,
      request_id: REQ,
      events: [event],
      next_cursor: 'WyIyMDI2LTExLTIyVDA5OjAwOjAyLjAwMFoiXQ',
    },
  },
  getEvent: {
    request: `GET /v1/events/${EVT}\n${KEY}`,
    status: 200,
    response: { ok: true, request_id: REQ, ...event, data: { ...result, job_id: JOB } },
  },
  redeliverEvent: {
    request: `POST /v1/events/${EVT}/redeliver\n${KEY}`,
    status: 202,
    response: { ok: true, request_id: REQ, event_id: EVT },
  },
  getStatement: {
    request: `GET /v1/statements?from=2026-11-21&to=2026-11-22\n${KEY}\n(Accept: text/csv for the same days as CSV)`,
    status: 200,
    response: {
      ok: true,
      request_id: REQ,
      mode: 'test',
      currency: 'USD',
      from: '2026-11-21',
      to: '2026-11-22',
      days: [day('2026-11-21', 10, 0, 0), day('2026-11-22', 10, 25, 0.2)],
      totals: withoutDate(day('2026-11-22', 10, 25, 0.2)),
    },
  },
};
