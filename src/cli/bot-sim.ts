// `redeem-gateway bot-sim`: the Bot API stand-in (src/dev/bot-api-sim.ts) with a chat in the
// terminal, so a person can try the bot with no Telegram and no network (contract 14.8). Reads
// lines from stdin whether or not it is a terminal (tests pipe it), writes plain text.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import {
  type BotApiSim,
  buttonsOf,
  DEFAULT_BOT_TOKEN,
  DEFAULT_BOT_USERNAME,
  type SimEvent,
  type SimMessage,
  type SimUser,
  startBotApiSim,
} from '../dev/bot-api-sim.ts';

export const BOT_SIM_HELP = `redeem-gateway bot-sim [options]

Starts a local stand-in for Telegram's Bot API on 127.0.0.1 and a chat with the bot in this
terminal: you are a Telegram user in a private chat; the service, started with the BOT_TOKEN and
BOT_API_ROOT printed here, is the bot.

Options:
  --port N            listen port on 127.0.0.1, 0 for any free one [8090]
  --user-id N         your Telegram user id [1001]
  --username NAME     your Telegram username [sim_user]
  --token T           the bot token the stand-in accepts [${DEFAULT_BOT_TOKEN}]
  --bot-username NAME the bot's username [${DEFAULT_BOT_USERNAME}]
${chatHelp()}`;

function chatHelp(): string {
  return `
In the chat:
  any text              sent to the bot as your message (e.g. /help)
  !N                    press button N of the newest bot message with buttons
  :file PATH [caption]  send a local file as a document (e.g. :file codes.txt /addstock 660)
  :pay                  pay the newest invoice
  :help                 this list
  :quit                 stop (Ctrl-D and Ctrl-C too)
`;
}

export class UsageError extends Error {
  override name = 'UsageError';
}

export function parseBotSimArgs(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string', default: '8090' },
      'user-id': { type: 'string', default: '1001' },
      username: { type: 'string', default: 'sim_user' },
      token: { type: 'string', default: DEFAULT_BOT_TOKEN },
      'bot-username': { type: 'string', default: DEFAULT_BOT_USERNAME },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) return { help: true as const };
  if (!/^\d{1,5}$/.test(values.port) || Number(values.port) > 65535)
    throw new UsageError('--port must be an integer from 0 to 65535');
  if (!/^[1-9]\d{0,14}$/.test(values['user-id']))
    throw new UsageError('--user-id must be a positive integer');
  if (!/^[A-Za-z0-9_]{1,32}$/.test(values.username))
    throw new UsageError('--username: letters, digits and _');
  if (!/^\d{1,20}:[A-Za-z0-9_-]{30,}$/.test(values.token))
    throw new UsageError('--token must look like <digits>:<secret of 30+ characters>');
  return {
    help: false as const,
    port: Number(values.port),
    user: { id: Number(values['user-id']), username: values.username, first_name: values.username },
    token: values.token,
    botUsername: values['bot-username'],
  };
}

/** Amounts of an invoice are in the currency's smallest unit; most currencies have 2 decimals. */
const ZERO_DECIMAL = new Set(['XTR', 'JPY', 'KRW', 'VND', 'CLP', 'ISK', 'UGX', 'PYG']);
function money(amount: number, currency: string): string {
  return ZERO_DECIMAL.has(currency) ? `${amount} ${currency}` : `${(amount / 100).toFixed(2)} ${currency}`;
}

/** A message's text for the terminal: continuation lines indented under the first. */
function body(m: SimMessage): string {
  const doc = (m as { extra?: { document?: { file_name?: string; file_size?: number } } }).extra?.document;
  const text = m.invoice
    ? `invoice "${m.invoice.title}": ${money(m.invoice.total_amount, m.invoice.currency)} (type :pay to pay)`
    : doc
      ? `[document ${doc.file_name}, ${doc.file_size} bytes]${m.caption ? ` ${m.caption}` : ''}`
      : (m.text ?? m.caption ?? '[no text]');
  return text.replaceAll('\n', '\n     ');
}

function buttonsLine(m: SimMessage): string {
  return buttonsOf(m)
    .map((b, i) => `[${i + 1}] ${b.text}${b.url ? ` <${b.url}>` : ''}`)
    .join('  ');
}

/** How one thing the bot did reads in the terminal. */
export function describeEvent(e: SimEvent): string | undefined {
  if (e.type === 'callback_answer') return `bot (${e.showAlert ? 'alert' : 'notice'}): ${e.text}`;
  const m = e.message;
  if (e.type === 'deleted') {
    const first = (m.text ?? m.caption ?? '').split('\n')[0];
    return m.from_bot ? `bot (deleted): ${first}` : `(your message "${first}" was deleted by the bot)`;
  }
  if (!m.from_bot) return undefined;
  const buttons = buttonsLine(m);
  return `bot${e.type === 'edited' ? ' (edited)' : ''}: ${body(m)}${buttons ? `\n${buttons}` : ''}`;
}

/** What one typed line does; answers a line to print, if any. */
async function act(sim: BotApiSim, user: SimUser, line: string): Promise<string | undefined> {
  const chat = () => sim.messages(user.id).filter((m) => m.from_bot && !m.deleted);
  const press = /^!(\d+)$/.exec(line);
  if (press) {
    const m = chat()
      .filter((x) => buttonsOf(x).length > 0)
      .at(-1);
    if (!m) return '(no bot message has buttons)';
    const button = buttonsOf(m)[Number(press[1]) - 1];
    if (!button) return `(the newest message with buttons has ${buttonsOf(m).length})`;
    if (button.callback_data === undefined) return `(button ${press[1]} is a link: ${button.url ?? ''})`;
    await sim.press(user, m, button.callback_data);
    return undefined;
  }
  const file = /^:file\s+(\S+)(?:\s+(.*))?$/.exec(line);
  if (file) {
    const content = readFileSync(file[1]!);
    const caption = file[2]?.trim();
    await sim.sendDocument(user, { fileName: basename(file[1]!), content, ...(caption ? { caption } : {}) });
    return `(sent ${basename(file[1]!)}, ${content.length} bytes)`;
  }
  if (line === ':pay') {
    const invoice = chat()
      .filter((x) => x.invoice)
      .at(-1);
    if (!invoice?.invoice) return '(no invoice to pay)';
    const paid = await sim.pay(user, invoice);
    const amount = money(invoice.invoice.total_amount, invoice.invoice.currency);
    return paid.accepted
      ? `(paid ${amount}, charge ${paid.chargeId})`
      : `(payment refused: ${paid.errorMessage})`;
  }
  if (line === ':help') return chatHelp().trim();
  if (line.startsWith(':') || line.startsWith('!'))
    return `(unknown command ${line.split(/\s/)[0]}; :help lists them)`;
  await sim.sendText(user, line);
  return undefined;
}

export async function runBotSim(
  argv: string[],
  io: { stdin: Readable; stdout: Writable } = { stdin: process.stdin, stdout: process.stdout },
): Promise<void> {
  let parsed: ReturnType<typeof parseBotSimArgs>;
  try {
    parsed = parseBotSimArgs(argv);
  } catch (err) {
    process.stderr.write(`error: ${(err as Error).message}\n`);
    process.exitCode = 2;
    return;
  }
  if (parsed.help) {
    io.stdout.write(BOT_SIM_HELP);
    return;
  }
  const { user } = parsed;
  const sim = await startBotApiSim({ port: parsed.port, token: parsed.token, username: parsed.botUsername });
  const print = (text: string) => io.stdout.write(`${text}\n`);
  print(`Bot API stand-in listening on ${sim.url} (bot @${sim.bot.username}, id ${sim.bot.id})`);
  print('Start the service in another terminal with:');
  print(`  BOT_TOKEN=${sim.token} BOT_API_ROOT=${sim.url} npm start`);
  print(`You are user ${user.id} (@${user.username}) in a private chat with the bot. To link yourself,`);
  print(
    'have the operator make a link (redeem-gateway admin bot link …) and type the /start <token> it gives.',
  );
  print('Type :help for the chat commands.');
  sim.on((e) => {
    const text = describeEvent(e);
    // The bot may write to other chats (a test's pushUpdate, alerts to other owners): say whose.
    const chatId = e.type === 'callback_answer' ? user.id : e.message.chat_id;
    if (text) print(chatId === user.id ? text : `(chat ${chatId}) ${text}`);
  });

  // One line at a time, in order: a :pay waits for the bot's answer before the next line goes.
  let queue = Promise.resolve();
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    rl.close();
    // An open stdin pipe would keep the process alive after :quit: let go of it.
    io.stdin.destroy();
    void queue.then(() => sim.close());
  };
  const rl = createInterface({ input: io.stdin, terminal: false });
  rl.on('line', (raw) => {
    const line = raw.trim();
    if (!line || stopping) return;
    if (line === ':quit') return stop();
    queue = queue.then(async () => {
      try {
        const answer = await act(sim, user, line);
        if (answer) print(answer);
      } catch (err) {
        print(`(error: ${(err as Error).message})`);
      }
    });
  });
  rl.on('close', stop);
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
