// A stock import says which codes were not added and why: by position in
// the API and by file line in the CLI, never by the code itself.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { listenAdmin, runAdminCli } from '../helpers/admin-cli.ts';
import { createMerchant, createTestApp, type TestApp } from '../helpers/app.ts';
import { addStock, uniqueCode } from '../helpers/redeem.ts';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe('stock import issues', () => {
  test('the API lists rejected and duplicate codes by position, with the reason, never the code', async () => {
    const m = await createMerchant(t);
    const other = await createMerchant(t);
    const [a, b, held] = [uniqueCode('IMP'), uniqueCode('IMP'), uniqueCode('IMP')];
    await addStock(t, other.customerId, 'live', '60', [held]);
    const codes = [a, 'bad code!', ` ${a} `, b, held, 'x'];
    const res = await addStock(t, m.customerId, 'test', '60', codes);
    expect(res).toEqual({
      ok: true,
      request_id: expect.any(String),
      added: 2,
      duplicates: 2,
      rejected: 2,
      issues: [
        { index: 1, kind: 'rejected', reason: 'not a code: 4 to 64 letters, digits or "-"' },
        { index: 2, kind: 'duplicate', reason: 'repeats position 0 of this import' },
        { index: 4, kind: 'duplicate', reason: 'already in stock' },
        { index: 5, kind: 'rejected', reason: 'not a code: 4 to 64 letters, digits or "-"' },
      ],
    });
    expect(JSON.stringify(res)).not.toContain(held);
  });

  test('the CLI names the file lines, in text and in --json', async () => {
    const url = await listenAdmin(t.admin);
    const m = await createMerchant(t);
    const a = uniqueCode('IMP');
    const file = join(mkdtempSync(join(tmpdir(), 'rg-import-')), 'codes.txt');
    writeFileSync(file, `${a}\n\nbad code!\n${a}\n`);
    const args = ['stock', 'import', String(m.customerId), '--mode', 'test', '--category', '60'];
    const run = (extra: string[]) => runAdminCli(url, [...args, '--file', file, ...extra]);
    const text = await run([]);
    expect(text).toEqual({
      code: 0,
      stderr: '',
      stdout:
        'stock import: 1 added, 1 duplicates, 1 rejected\n' +
        '  line 3: rejected, not a code: 4 to 64 letters, digits or "-"\n' +
        '  line 4: duplicate, repeats position 0 of this import\n',
    });
    const json = JSON.parse((await run(['--json'])).stdout);
    expect(json.issues).toEqual([
      { index: 0, kind: 'duplicate', reason: 'already in stock', line: 1 },
      { index: 1, kind: 'rejected', reason: 'not a code: 4 to 64 letters, digits or "-"', line: 3 },
      { index: 2, kind: 'duplicate', reason: 'repeats position 0 of this import', line: 4 },
    ]);
  });
});
