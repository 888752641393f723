// The CLI of docs/reference/operators-and-audit.md: `admin operators add|list|revoke`, `admin audit`, `admin wallet adjust`
// (with `--usd -5` as `--usd=-5`) and `admin keys reroll`, against a listening admin app.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { listenAdmin, runAdminCli } from '../helpers/admin-cli.ts';
import { ADMIN_TOKEN, createMerchant, createTestApp, type TestApp } from '../helpers/app.ts';

let t: TestApp;
let url: string;
beforeAll(async () => {
  t = await createTestApp();
  url = await listenAdmin(t.admin);
});
afterAll(() => t.close());

const cli = (args: string[], token = ADMIN_TOKEN) => runAdminCli(url, args, { token });

describe('operator commands', () => {
  test('operators add, list, revoke; the new token works until revoked', async () => {
    const added = await cli(['operators', 'add', '--name', 'dana', '--role', 'viewer']);
    expect(added.code, added.stderr).toBe(0);
    const [intro, token] = added.stdout.trim().split('\n');
    expect(intro).toMatch(
      /^operator dana \(viewer\) created as op_[A-Za-z0-9]{24}; its token is shown only this once:$/,
    );
    expect(token).toMatch(/^adm_[A-Za-z0-9]{40}$/);
    const id = /created as (op_\w+);/.exec(intro!)![1]!;

    const listed = await cli(['operators', 'list'], token);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(
      /^operators:\n {2}id +name +role +created_at +revoked_at\n {2}op_root +root +admin /,
    );
    expect(listed.stdout).toContain(`${id}  dana  viewer  2026-11-22T09:00:00Z  -`);

    const denied = await cli(['customers', 'create', '--name', 'x'], token);
    expect(denied).toEqual({
      code: 1,
      stdout: '',
      stderr: 'error: forbidden: the operator dana is a viewer and may only read\n',
    });
    expect((await cli(['operators', 'revoke', id])).stdout).toBe(`operator dana (${id}) revoked\n`);
    expect((await cli(['operators', 'list'], token)).stderr).toBe(
      'error: unauthorized: missing or wrong admin token\n',
    );
  });

  test('wallet adjust takes --usd -5 like --usd=-5; audit lists who did it', async () => {
    const m = await createMerchant(t, { topup: { test: 10 } });
    const down = await cli([
      'wallet',
      'adjust',
      String(m.customerId),
      '--mode',
      'test',
      '--usd',
      '-5',
      '--reason',
      'double',
    ]);
    expect(down.code, down.stderr).toBe(0);
    expect(down.stdout).toMatch(/^adjusted by -5 USD \(test\) for customer \d+: entry \d+; balance 5 USD\n$/);
    const tooMuch = await cli([
      'wallet',
      'adjust',
      String(m.customerId),
      '--mode',
      'test',
      '--usd=-6',
      '--reason',
      'x',
    ]);
    expect(tooMuch.stderr).toBe(
      'error: insufficient_funds: this adjustment would take the balance below zero\n',
    );
    const bad = await cli(['wallet', 'topup', String(m.customerId), '--mode', 'test', '--usd', '-5']);
    const badEq = await cli(['wallet', 'topup', String(m.customerId), '--mode', 'test', '--usd=-5']);
    expect(bad).toEqual(badEq);
    expect(bad.stderr).toBe(
      'error: bad_request: usd: must be a positive USD amount with at most 6 decimals, at most 1000000\n',
    );

    const audit = await cli([
      'audit',
      '--customer',
      String(m.customerId),
      '--action',
      'wallet.adjust',
      '--json',
    ]);
    expect(audit.code).toBe(0);
    expect(JSON.parse(audit.stdout).events).toEqual([
      expect.objectContaining({ actor: 'root', action: 'wallet.adjust', customer_id: m.customerId }),
    ]);
    const text = await cli(['audit', 'list', '--customer', String(m.customerId), '--limit', '1']);
    expect(text.stdout).toMatch(/^audit events, newest first:\n {2}at +actor +action/);
    expect(text.stdout).toContain('wallet.adjust');
    expect(text.stdout).toMatch(/more: add --cursor \S+\n$/);
  });

  test('keys reroll prints the new key once and when the old one stops', async () => {
    const m = await createMerchant(t);
    const r = await cli(['keys', 'reroll', m.keyId, '--grace-seconds', '3600']);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^key key_\w+ created \(prefix rk_test_\w{4}\); it is shown only this once:$/);
    expect(lines[1]).toMatch(/^rk_test_[A-Za-z0-9]{32}$/);
    expect(lines[2]).toBe('the old key works until 2026-11-22T10:00:00Z');
    const again = await cli(['keys', 'reroll', 'key_nothing']);
    expect(again.stderr).toBe('error: not_found: unknown key\n');
  });

  test('help lists every new command', async () => {
    const help = (await cli(['help'])).stdout;
    for (const c of [
      'operators add',
      'operators list',
      'operators revoke',
      'audit list',
      'wallet adjust',
      'keys reroll',
    ])
      expect(help).toContain(`  ${c} `);
  });
});
