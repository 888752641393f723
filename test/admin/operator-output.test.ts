// What operators see of stored text: the admin CLI never prints a terminal control
// sequence a merchant stored (a redeem's `reference`), and webhook URLs reach operators with their
// query values masked (a receiver's token is often there).
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { printableJson, printableLines } from '../../src/cli/printable.ts';
import { listenAdmin, runAdminCli } from '../helpers/admin-cli.ts';
import { adminCall, bearer, createMerchant, createTestApp, type TestApp } from '../helpers/app.ts';
import { redeem, uniqueCode } from '../helpers/redeem.ts';

let t: TestApp;
let adminUrl: string;
beforeAll(async () => {
  t = await createTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
  adminUrl = await listenAdmin(t.admin);
});
afterAll(() => t.close());

const cli = (args: string[]) => runAdminCli(adminUrl, args);

/** Control characters a terminal acts on (C0 but newline, DEL, C1, the bidi override used here). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: as above
const CONTROL_ANY = /[\u0000-\u001f\u007f-\u009f\u202e]/;

// ESC [2J clears the screen; OSC 8 makes a link; U+009B is a one-character CSI; U+202E reverses.
const HOSTILE = 'ord\u001b[2J\u001b]8;;https://evil.example/\u0007x\u009b31m\u202eevil\r\nfake: line';

describe('printable output', () => {
  test('control characters are removed line by line; JSON keeps the text but escapes C1 and bidi', () => {
    expect(printableLines(['a: ok', `reference: ${HOSTILE}`])).toBe(
      'a: ok\nreference: ord[2J]8;;https://evil.example/x31mevilfake: line',
    );
    const json = printableJson(JSON.stringify({ reference: HOSTILE }));
    expect(json).not.toMatch(CONTROL_ANY);
    expect(JSON.parse(json)).toEqual({ reference: HOSTILE });
  });

  test('admin jobs show: the stored reference is printed without its control characters', async () => {
    const m = await createMerchant(t);
    const res = await redeem(t, m.key, {
      player_id: '5123456789',
      codes: [uniqueCode('OK')],
      reference: HOSTILE,
      async: true,
    });
    expect(res.statusCode, res.body).toBe(202);
    const jobId = res.json().job_id as string;
    const human = await cli(['jobs', 'show', jobId]);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toContain('ord[2J');
    expect(human.stdout).not.toMatch(CONTROL);
    const json = await cli(['jobs', 'show', jobId, '--json']);
    expect(json.stdout).not.toMatch(CONTROL);
    expect(JSON.stringify(JSON.parse(json.stdout))).toContain(JSON.stringify(HOSTILE).slice(1, -1));
  });
});

describe('webhook URLs shown to operators', () => {
  test("a delivery's URL has its query values masked in the admin job view", async () => {
    const m = await createMerchant(t);
    const url = 'https://127.0.0.1:9/hook?token=s3cr3t-receiver-token&x=1';
    const reg = await t.api.inject({
      method: 'POST',
      url: '/v1/webhook',
      headers: bearer(m.key),
      payload: { url },
    });
    expect(reg.statusCode).toBe(200);
    const res = await redeem(t, m.key, { player_id: '5123456789', codes: [uniqueCode('OK')], async: true });
    const jobId = res.json().job_id as string;
    const { deliverDueEvents } = await import('../../src/core/webhooks/delivery.ts');
    // Wait for the job, then one delivery attempt (the receiver port is closed: it fails).
    for (let i = 0; i < 200; i++) {
      const job = await adminCall<{ job: { status: string } }>(t, 'GET', `/admin/v1/jobs/${jobId}`);
      if (job.job?.status === 'completed') break;
      await new Promise((r) => setTimeout(r, 25));
    }
    await deliverDueEvents(t.ctx, { timeoutMs: 2000 });
    const view = await adminCall(t, 'GET', `/admin/v1/jobs/${jobId}`);
    const text = JSON.stringify(view);
    expect(text).not.toContain('s3cr3t');
    expect(text).toContain('https://127.0.0.1:9/hook?token=[redacted]&x=[redacted]');
  });
});
