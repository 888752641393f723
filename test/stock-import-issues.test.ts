// A stock import says which codes were not added and why (issue 18's papercut): by position in
// the API and by file line in the CLI, never by the code itself.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { adminMain } from '../src/cli/admin.ts';
import { ADMIN_TOKEN, createMerchant, createTestApp, type TestApp } from './helpers/app.ts';
import { addStock, uniqueCode } from './helpers/redeem.ts';

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
    await t.admin.listen({ host: '127.0.0.1', port: 0 });
    const addr = t.admin.server.address();
    const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    const m = await createMerchant(t);
    const a = uniqueCode('IMP');
    const file = join(mkdtempSync(join(tmpdir(), 'rg-import-')), 'codes.txt');
    writeFileSync(file, `${a}\n\nbad code!\n${a}\n`);
    const run = async (extra: string[]) => {
      const out: string[] = [];
      const code = await adminMain(
        [
          'stock',
          'import',
          String(m.customerId),
          '--mode',
          'test',
          '--category',
          '60',
          '--file',
          file,
          ...extra,
        ],
        {
          env: { ADMIN_URL: url, ADMIN_TOKEN },
          stdout: (s) => out.push(s),
          stderr: (s) => out.push(s),
          stdin: Readable.from([]),
        },
      );
      return { code, out: out.join('') };
    };
    const text = await run([]);
    expect(text).toEqual({
      code: 0,
      out:
        'stock import: 1 added, 1 duplicates, 1 rejected\n' +
        '  line 3: rejected, not a code: 4 to 64 letters, digits or "-"\n' +
        '  line 4: duplicate, repeats position 0 of this import\n',
    });
    const json = JSON.parse((await run(['--json'])).out);
    expect(json.issues).toEqual([
      { index: 0, kind: 'duplicate', reason: 'already in stock', line: 1 },
      { index: 1, kind: 'rejected', reason: 'not a code: 4 to 64 letters, digits or "-"', line: 3 },
      { index: 2, kind: 'duplicate', reason: 'repeats position 0 of this import', line: 4 },
    ]);
  });
});
