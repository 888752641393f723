// `redeem-gateway admin …`: a thin client of the admin API (docs/reference/operators-and-audit.md#the-admin-api). The API does all
// the validation; the CLI only turns arguments into JSON and answers into text, so the operator
// gets the same rules and messages whether they use curl or this command.
import { parseArgs } from 'node:util';
import { BOT_COMMANDS } from './admin-bot-commands.ts';
import { AdminClientError, callAdmin, resolveTarget } from './admin-client.ts';
import { type AdminIo, type AdminRequest, type Json, type Parsed, UsageError } from './admin-command.ts';
import { COMMANDS as BASE_COMMANDS } from './admin-commands.ts';
import { OPERATOR_COMMANDS } from './admin-operator-commands.ts';
import { RECONCILE_COMMANDS } from './admin-reconcile-commands.ts';
import { REQUEST_COMMANDS } from './admin-request-commands.ts';
import { STOCK_COMMANDS } from './admin-stock-commands.ts';
import { WEBHOOK_COMMANDS } from './admin-webhook-commands.ts';
import { printableJson, printableLine, printableLines } from './printable.ts';

export type { AdminIo } from './admin-command.ts';

const COMMANDS = [
  ...BASE_COMMANDS,
  ...STOCK_COMMANDS,
  ...RECONCILE_COMMANDS,
  ...WEBHOOK_COMMANDS,
  ...OPERATOR_COMMANDS,
  ...BOT_COMMANDS,
  ...REQUEST_COMMANDS,
];

/**
 * `--usd -5` as `--usd=-5`: parseArgs takes a value starting with `-` for an option, and would
 * refuse the command line instead of sending the amount for the API to judge.
 */
export function joinNegativeValues(args: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const next = args[i + 1];
    if (/^--[a-z-]+$/.test(args[i]!) && next !== undefined && /^-\d/.test(next)) {
      out.push(`${args[i]}=${next}`);
      i++;
    } else out.push(args[i]!);
  }
  return out;
}

/** Exit codes: 0 done, 1 the API refused or could not be reached, 2 the command line is wrong. */
export const EXIT_API_ERROR = 1;
export const EXIT_USAGE = 2;

export function adminHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => `${c.name} ${c.args.join(' ')}`.length));
  const lines = COMMANDS.flatMap((c) => {
    const head = `  ${`${c.name} ${c.args.join(' ')}`.padEnd(width)}  ${c.summary}`;
    return c.synopsis ? [head, `  ${' '.repeat(width)}    ${c.synopsis}`] : [head];
  });
  return `redeem-gateway admin <command> [options] [--json]

Operator commands; a client of the admin API of a running server.

Commands:
${lines.join('\n')}
  ${'help'.padEnd(width)}  this text

Every command accepts --json: print the API's answer as one JSON object instead of text
(an error answer too). On an error, one line "error: <error_code>: <message>" goes to
standard error. Exit codes: 0 done, 1 refused by the API or API not reachable, 2 bad command line.

Environment (defaults in brackets):
  ADMIN_URL                admin API address [http://ADMIN_HOST:ADMIN_PORT]
  ADMIN_HOST, ADMIN_PORT   used when ADMIN_URL is unset [127.0.0.1, 8081]
  ADMIN_TOKEN              operator token: root's ADMIN_TOKEN or an operator's adm_… token
                           [read from DATA_DIR/admin-token]
  DATA_DIR                 the server's data directory, for the token file [./data]
`;
}

/** `admin audit [options]` is `admin audit list [options]` (a thing whose only verb is a list). */
function withVerb(argv: string[]): string[] {
  const [thing, next] = argv;
  const bare = thing === 'audit' && (next === undefined || next.startsWith('-'));
  return bare ? [thing, 'list', ...argv.slice(1)] : argv;
}

/** Parses and runs one admin command; returns the exit code. */
export async function adminMain(argv: string[], io: AdminIo): Promise<number> {
  const [thing, verb, ...rest] = withVerb(argv);
  if (thing === undefined || ['help', '--help', '-h'].includes(thing)) {
    io.stdout(adminHelp());
    return 0;
  }
  // A one-word command (`statements ID`) takes the second word as its first argument.
  const single = COMMANDS.find((c) => c.name === thing);
  const command = single ?? COMMANDS.find((c) => c.name === `${thing} ${verb}`);
  if (single && verb !== undefined) rest.unshift(verb);
  if (!command) {
    const known = COMMANDS.some((c) => c.name.startsWith(`${thing} `));
    io.stderr(
      `error: unknown command "admin ${known ? `${thing} ${verb ?? ''}`.trim() : thing}" (try: redeem-gateway admin help)\n`,
    );
    return EXIT_USAGE;
  }
  const usage = `redeem-gateway admin ${command.name} ${command.args.join(' ')} ${command.synopsis}`.replace(
    /\s+/g,
    ' ',
  );
  if (rest.includes('--help') || rest.includes('-h')) {
    io.stdout(`usage: ${usage.trim()} [--json]\n  ${command.summary}\n`);
    return 0;
  }

  let parsed: Parsed;
  let requests: AdminRequest[];
  try {
    const { values, positionals } = parseArgs({
      args: joinNegativeValues(rest),
      options: { ...command.options, json: { type: 'boolean' } },
      allowPositionals: true,
      strict: true,
    });
    if (positionals.length !== command.args.length) {
      throw new UsageError(
        command.args.length
          ? `expected ${command.args.join(' ')}, got ${positionals.length ? positionals.join(' ') : 'nothing'}`
          : `unexpected argument ${positionals[0]}`,
      );
    }
    parsed = { args: positionals, values };
    const planned = await command.request(parsed, io);
    requests = Array.isArray(planned) ? planned : [planned];
  } catch (err) {
    // parseArgs explains unknown options at length; its first sentence says it all.
    const message = (err instanceof Error ? err.message : String(err)).split(/\.\s/)[0];
    io.stderr(`error: ${message} (usage: ${usage.trim()})\n`);
    return EXIT_USAGE;
  }

  const json = parsed.values.json === true;
  const combine = (answers: Json[]) => (command.combine ? command.combine(answers) : answers.at(-1)!);
  const answers: Json[] = [];
  // When a later request of several fails, say what the earlier ones did (still one line).
  const done = () =>
    answers.length
      ? ` (request ${answers.length + 1} of ${requests.length}; the ones before it succeeded: ${
          command.print(combine(answers), parsed, {})[0]
        })`
      : '';
  try {
    const target = resolveTarget(io.env);
    for (const req of requests) {
      const answer = await callAdmin(target, req.method, req.path, req.body, req.headers);
      if (answer.status >= 400 || answer.body.ok === false) {
        if (json) io.stdout(`${printableJson(JSON.stringify(answer.body))}\n`);
        const code = answer.body.error_code ?? `http_${answer.status}`;
        const message = String(answer.body.message ?? 'no message').replace(/\s*\n\s*/g, ' ');
        io.stderr(`${printableLine(`error: ${code}: ${message}${done()}`)}\n`);
        return EXIT_API_ERROR;
      }
      // A write under an Idempotency-Key says whether it was a replay (SVC-Idempotent-Replay):
      // `replayed` in --json, "(replayed)" in text.
      const idempotent = Object.keys(req.headers ?? {}).some((h) => h.toLowerCase() === 'idempotency-key');
      answers.push(idempotent ? { ...answer.body, replayed: answer.replayed } : answer.body);
    }
  } catch (err) {
    if (!(err instanceof AdminClientError)) throw err;
    io.stderr(`error: ${err.message}${done()}\n`);
    return EXIT_API_ERROR;
  }

  const answer = combine(answers);
  const sent = (requests[0]?.body ?? {}) as Json;
  // Stored text may hold terminal control sequences: never printed raw (src/cli/printable.ts),
  // except a document that holds none (a statement's CSV: dates and numbers, in its own bytes).
  const document = json ? undefined : command.document?.(answer, parsed);
  io.stdout(
    json
      ? `${printableJson(JSON.stringify(answer))}\n`
      : (document ?? `${printableLines(command.print(answer, parsed, sent))}\n`),
  );
  return 0;
}

/** Entry from `redeem-gateway admin …`: runs against the process and sets its exit code. */
export async function runAdmin(argv: string[]): Promise<void> {
  const code = await adminMain(argv, {
    env: process.env,
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
    stdin: process.stdin,
  });
  if (code !== 0) process.exitCode = code;
}
