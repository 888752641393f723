// The admin CLI says when the API answered a replay: a wallet top-up or adjustment
// sent again under the same --idempotency-key is answered from the first request
// (SVC-Idempotent-Replay: true) and writes nothing; --json carries `replayed`, text says
// "(replayed)" instead of "topped up" again. Against a listening admin app and its database.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { listenAdmin, runAdminCli } from '../helpers/admin-cli.ts';
import { createMerchant, createTestApp, type TestApp } from '../helpers/app.ts';

let t: TestApp;
let url: string;
beforeAll(async () => {
  t = await createTestApp();
  url = await listenAdmin(t.admin);
});
afterAll(() => t.close());

const cli = (args: string[]) => runAdminCli(url, args);

const entries = async (customerId: number) =>
  (
    await t.ctx.db.query<{ n: number }>(
      'select count(*)::int as n from wallet_ledger where customer_id = $1',
      [customerId],
    )
  ).rows[0]!.n;

describe('replays in the CLI', () => {
  test('wallet topup: the same key twice tops up once; the second answer is marked replayed', async () => {
    const m = await createMerchant(t);
    const id = String(m.customerId);
    const args = ['wallet', 'topup', id, '--mode', 'test', '--usd', '5', '--idempotency-key', 'inv-1'];
    const first = await cli(args);
    expect(first).toEqual({
      code: 0,
      stdout: `topped up 5 USD (test) for customer ${id}; balance 5 USD\n`,
      stderr: '',
    });
    const again = await cli(args);
    expect(again).toEqual({
      code: 0,
      stdout: `(replayed) this key's top-up of 5 USD (test) for customer ${id} was made before; nothing new written; balance 5 USD\n`,
      stderr: '',
    });
    expect(await entries(m.customerId)).toBe(1);

    const json = JSON.parse((await cli([...args, '--json'])).stdout);
    expect(json).toMatchObject({ ok: true, customer_id: m.customerId, balance_usd: 5, replayed: true });
    const fresh = JSON.parse(
      (
        await cli([
          'wallet',
          'topup',
          id,
          '--mode',
          'test',
          '--usd',
          '1',
          '--idempotency-key',
          'inv-2',
          '--json',
        ])
      ).stdout,
    );
    expect(fresh).toMatchObject({ balance_usd: 6, replayed: false });
    expect(await entries(m.customerId)).toBe(2);
  });

  test('wallet adjust: a replay is marked too; a read has no replayed field', async () => {
    const m = await createMerchant(t, { topup: { test: 10 } });
    const id = String(m.customerId);
    const args = [
      'wallet',
      'adjust',
      id,
      '--mode',
      'test',
      '--usd=-0.05',
      '--reason',
      'fee',
      '--idempotency-key',
      'adj-1',
    ];
    const first = await cli([...args, '--json']);
    expect(JSON.parse(first.stdout)).toMatchObject({ balance_usd: 9.95, replayed: false });
    const again = await cli(args);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(
      new RegExp(
        `^\\(replayed\\) this key's adjustment by -0\\.05 USD \\(test\\) for customer ${id} was made before \\(entry \\d+\\); nothing new written; balance 9\\.95 USD\\n$`,
      ),
    );
    const shown = JSON.parse((await cli(['customers', 'show', id, '--json'])).stdout);
    expect(shown).not.toHaveProperty('replayed');
  });
});
