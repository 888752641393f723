// The request log in the CLI: `admin requests` (the request log, filtered) and `admin lookup ID`, and
// `admin jobs list --player`, against a listening admin app.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { listenAdmin, runAdminCli } from '../helpers/admin-cli.ts';
import { bearer, createMerchant, createTestApp, type TestApp } from '../helpers/app.ts';
import { redeem, uniqueCode } from '../helpers/redeem.ts';

let t: TestApp;
let url: string;
beforeAll(async () => {
  t = await createTestApp({ jobWorker: false });
  url = await listenAdmin(t.admin);
});
afterAll(() => t.close());

const cli = (args: string[]) => runAdminCli(url, args);

describe('admin requests and admin lookup', () => {
  test('lists a customer’s refusals by status, error code and request id, as text and JSON', async () => {
    const m = await createMerchant(t);
    const missing = await t.api.inject({
      method: 'GET',
      url: '/v1/jobs/job_nothere',
      headers: bearer(m.key),
    });
    expect(missing.statusCode).toBe(404);
    const bad = await redeem(t, m.key, '{"player_id": ');
    expect(bad.statusCode).toBe(400);
    await t.api.requestLog.flush();

    const text = await cli(['requests', '--customer', String(m.customerId)]);
    expect(text.code, text.stderr).toBe(0);
    const lines = text.stdout.trimEnd().split('\n');
    // The counts by error code come above the list.
    expect(lines[0]).toBe('2 refused or failed by error code: bad_request ×1, not_found ×1');
    expect(lines[1]).toBe('refused and failed requests, newest first:');
    // The header row (its layout is admin-format.ts's table).
    expect(lines[2]).toMatch(
      /^\s*at\s+customer\s+key\s+mode\s+request\s+status\s+error_code\s+why\s+player\s+job\s+request_id\s+ip\s+took$/,
    );
    expect(text.stdout).toContain('body is not valid JSON');
    expect(text.stdout).toContain(`${m.keyPrefix} (test)`);
    expect(text.stdout).toContain('POST /v1/redeem');
    expect(text.stdout).toContain('GET /v1/jobs/job_nothere');
    expect(text.stdout).toContain(m.keyPrefix);
    expect(text.stdout).not.toContain(m.key);

    const json = await cli(['requests', '--customer', String(m.customerId), '--status', '404', '--json']);
    expect(JSON.parse(json.stdout).requests).toEqual([
      expect.objectContaining({
        status: 404,
        error_code: 'not_found',
        request_id: missing.headers['x-request-id'],
      }),
    ]);
    // By mode: the merchant's refusals are all test ones.
    const live = await cli(['requests', '--customer', String(m.customerId), '--mode', 'live', '--json']);
    expect(JSON.parse(live.stdout).counts).toEqual({ total: 0, by_error_code: [], complete: true });
    const test = await cli(['requests', '--customer', String(m.customerId), '--mode', 'test', '--json']);
    expect(JSON.parse(test.stdout).counts.total).toBe(2);
    const byCode = await cli([
      'requests',
      '--customer',
      String(m.customerId),
      '--error-code',
      'bad_request',
      '--json',
    ]);
    expect(JSON.parse(byCode.stdout).requests.map((r: { request_id: string }) => r.request_id)).toEqual([
      bad.headers['x-request-id'],
    ]);
    const byId = await cli(['requests', '--request-id', bad.headers['x-request-id'] as string, '--json']);
    expect(JSON.parse(byId.stdout).requests).toHaveLength(1);
    const none = await cli(['requests', '--customer', String(m.customerId), '--status', '5xx']);
    expect(none.stdout).toBe('no refused or failed requests\n');

    const wrong = await cli(['requests', '--status', 'teapot']);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/^error: bad_request: status: /);
  });

  test('--player, --day and --customer NAME; a 422 redeem shows its outcomes and its job', async () => {
    const m = await createMerchant(t);
    const named = await t.ctx.db.query<{ name: string }>('select name from customers where id = $1', [
      m.customerId,
    ]);
    const r = await redeem(t, m.key, { player_id: '00054321', codes: [uniqueCode(), uniqueCode()] });
    expect(r.statusCode).toBe(422);
    await t.api.requestLog.flush();
    const job = await t.ctx.db.query<{ id: string }>('select id from jobs where request_id = $1', [
      r.headers['x-request-id'],
    ]);
    const text = await cli(['requests', '--player', '00054321', '--day', 'today']);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain('1 refused or failed on 2026-11-22 by error code: no error code ×1');
    expect(text.stdout).toContain('bad_player ×2');
    expect(text.stdout).toContain(job.rows[0]!.id);
    const byName = await cli(['requests', '--customer', named.rows[0]!.name, '--json']);
    expect(JSON.parse(byName.stdout)).toMatchObject({
      counts: { total: 1, by_error_code: [{ error_code: null, count: 1 }] },
      requests: [{ player_id: '00054321', job_id: job.rows[0]!.id, outcomes: { bad_player: 2 } }],
    });
    const otherDay = await cli(['requests', '--player', '00054321', '--day', '2026-11-21']);
    expect(otherDay.stdout).toBe('no refused or failed requests\n');
  });

  test('customers health: live and test side by side, the mode in trouble first', async () => {
    const m = await createMerchant(t);
    await t.api.inject({ method: 'GET', url: '/v1/jobs/job_gone', headers: bearer(m.key) });
    await t.api.requestLog.flush();
    const text = await cli(['customers', 'health', String(m.customerId)]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toBe(
      [
        `customer ${m.customerId} on 2026-11-22: look at test first`,
        'test: no receiver; refused today: not_found ×1',
        'live: no receiver; refused today: none',
        '',
      ].join('\n'),
    );
  });

  test('lookup names a job, a request and a player; jobs list --player filters by player', async () => {
    const m = await createMerchant(t);
    const player = `8${Date.now().toString().slice(-9)}`;
    const r = await redeem(t, m.key, { player_id: player, codes: [uniqueCode()] });
    expect(r.statusCode).toBe(200);
    const requestId = r.headers['x-request-id'] as string;
    const req = await cli(['lookup', requestId]);
    expect(req.stdout).toMatch(
      new RegExp(
        `^request ${requestId}: customer ${m.customerId}; job job_\\w+; 0 row\\(s\\) in the request log\\n$`,
      ),
    );
    const jobId = /job (job_\w+)/.exec(req.stdout)![1]!;
    expect((await cli(['lookup', jobId])).stdout).toBe(`job ${jobId} of customer ${m.customerId}\n`);
    expect((await cli(['lookup', player])).stdout).toBe(
      `player ${player}: 1 job(s) (admin jobs list --player ${player})\n`,
    );
    expect((await cli(['lookup', 'nonsense'])).stdout).toBe(
      'nonsense is not a request, job, event or player id\n',
    );
    const jobs = await cli(['jobs', 'list', '--player', player, '--json']);
    expect(JSON.parse(jobs.stdout).jobs.map((j: { job_id: string }) => j.job_id)).toEqual([jobId]);
  });
});
