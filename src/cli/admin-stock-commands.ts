// The admin commands for stock (import from a file or standard input, in batches), one job, and
// quarantined codes.
import { readFileSync } from 'node:fs';
import { codeLines, isCsvName } from '../core/stock/import-lines.ts';
import {
  type AdminRequest,
  type Command,
  customerPath,
  id,
  type Json,
  MODE,
  required,
  str,
  UsageError,
} from './admin-command.ts';
import { formatGeneric, formatQuarantine } from './admin-format.ts';

/**
 * Codes per stock import request: the API takes at most 10,000 in one call, so a larger file goes
 * in several. Sending the same file again is safe: codes already in stock count as duplicates.
 */
export const IMPORT_BATCH = 10_000;

/** The file line numbers of the codes of the `stock import` being run (one command per process). */
let importLines: number[] = [];

export const STOCK_COMMANDS: Command[] = [
  {
    name: 'stock import',
    args: ['ID'],
    synopsis: '--mode test|live --category C [--file PATH]',
    summary: 'add codes to stock, one per line, from PATH or standard input (10,000 per request)',
    options: { ...MODE, category: { type: 'string' }, file: { type: 'string' } },
    request: async (p, io) => {
      const mode = required(p, 'mode');
      const category = required(p, 'category');
      const file = str(p, 'file');
      if (file === undefined && io.stdin.isTTY)
        throw new UsageError('give --file PATH, or pipe the codes into standard input');
      const text = file === undefined ? await readAll(io.stdin) : readCodeFile(file);
      // One reading of an import file for the CLI and the chat (core/stock/import-lines.ts); the
      // API checks the format and counts duplicates. Codes are never echoed: they are bearer value.
      const read = codeLines(text, { csv: file !== undefined && isCsvName(file) });
      const codes = read.map((c) => c.code);
      // The file's line number of each code sent, to name the lines the API reports.
      importLines = read.map((c) => c.line);
      const batches: AdminRequest[] = [];
      for (let i = 0; i === 0 || i < codes.length; i += IMPORT_BATCH) {
        const batch = codes.slice(i, i + IMPORT_BATCH);
        batches.push({
          method: 'POST',
          path: `${customerPath(p)}/stock`,
          body: { mode, category, codes: batch },
        });
      }
      return batches;
    },
    combine: (answers) => {
      // Each issue's position in its batch becomes the file line of that code.
      const issues = answers.flatMap((a, b) =>
        ((a.issues as Json[] | undefined) ?? []).map((x) => ({
          ...x,
          line: importLines[b * IMPORT_BATCH + Number(x.index)],
        })),
      );
      // An API without the issues list (an older server) gets none added.
      const withIssues = answers.some((a) => 'issues' in a) ? { issues } : {};
      if (answers.length === 1) return { ...answers[0]!, ...withIssues };
      const sum = (field: string) => answers.reduce((n, a) => n + Number(a[field] ?? 0), 0);
      return {
        ok: true,
        request_id: answers.at(-1)!.request_id,
        request_ids: answers.map((a) => a.request_id),
        added: sum('added'),
        duplicates: sum('duplicates'),
        rejected: sum('rejected'),
        ...withIssues,
      };
    },
    print: (a) => [
      `stock import: ${a.added} added, ${a.duplicates} duplicates, ${a.rejected} rejected`,
      ...((a.issues as Json[] | undefined) ?? []).map((x) => `  line ${x.line}: ${x.kind}, ${x.reason}`),
      ...formatGeneric(
        Object.fromEntries(
          Object.entries(a).filter(
            ([k]) =>
              !['ok', 'request_id', 'request_ids', 'added', 'duplicates', 'rejected', 'issues'].includes(k),
          ),
        ),
        '  ',
      ),
    ],
  },
  {
    name: 'jobs show',
    args: ['JOB_ID'],
    synopsis: '',
    summary: 'a job with its per-code attempts and webhook deliveries',
    options: {},
    request: async (p) => ({ method: 'GET', path: `/admin/v1/jobs/${id(p)}` }),
    print: (a) => formatGeneric(a),
  },
  {
    name: 'quarantine list',
    args: [],
    synopsis: '[--customer ID] [--mode test|live]',
    summary: 'codes held in quarantine (outcome unknown), oldest first, by their last 4 characters',
    options: { ...MODE, customer: { type: 'string' } },
    request: async (p) => {
      const query = new URLSearchParams();
      const customer = str(p, 'customer');
      const mode = str(p, 'mode');
      if (customer !== undefined) query.set('customer_id', customer);
      if (mode !== undefined) query.set('mode', mode);
      const q = query.toString();
      return { method: 'GET', path: `/admin/v1/quarantine${q ? `?${q}` : ''}` };
    },
    print: formatQuarantine,
  },
  {
    name: 'quarantine check',
    args: [],
    synopsis: '',
    summary: 'ask the upstream now about every quarantined code and settle what it can tell',
    options: {},
    request: async () => ({ method: 'POST', path: '/admin/v1/quarantine/check' }),
    print: (a) => [`checked ${a.checked}: ${a.used} used, ${a.unused} unused, ${a.unknown} unknown`],
  },
  {
    name: 'quarantine settle',
    args: ['JOB_ID', 'POSITION'],
    synopsis: '--outcome used|unused',
    summary: 'settle one quarantined code by hand (used: deleted and billed as code_used)',
    options: { outcome: { type: 'string' } },
    request: async (p) => ({
      method: 'POST',
      path: `/admin/v1/jobs/${id(p)}/codes/${id(p, 1)}/settle`,
      body: { outcome: required(p, 'outcome') },
    }),
    print: (a) => [`${a.job_id} #${a.position} settled: ${a.settlement}`],
  },
];

function readCodeFile(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read --file ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}
