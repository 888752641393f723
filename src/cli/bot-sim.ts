// `redeem-gateway bot-sim`: the Bot API stand-in (src/dev/bot-api-sim.ts) with a chat in the
// terminal, so a person can try the bot with no Telegram and no network (contract 14.8). Reads
// lines from stdin whether or not it is a terminal (tests pipe it), writes plain text.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { clearLine, createInterface, cursorTo } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import {
  type BotApiSim,
  buttonsOf,
  DEFAULT_BOT_TOKEN,
  DEFAULT_BOT_USERNAME,
  MAX_MESSAGE_LENGTH,
  type SimEvent,
  type SimMessage,
  type SimUser,
  startBotApiSim,
} from '../dev/bot-api-sim.ts';

export const BOT_SIM_HELP = `redeem-gateway bot-sim [options]

Starts a local stand-in for Telegram's Bot API on 127.0.0.1 and a chat with the bot in this
terminal: you are a Telegram user in a private chat (or several people, each in their own);
the service, started with the BOT_TOKEN and BOT_API_ROOT printed here, is the bot.

Options:
  --port N            listen port on 127.0.0.1, 0 for any free one [8090]
  --user-id N         your Telegram user id; with --users, the first person's (the next
                      get N+1, N+2 …) [1001]
  --username NAME     your Telegram username [sim_user]
  --users A,B,…       play several people (e.g. --users owner,staff): the first speaks first,
                      /as NAME switches
  --token T           the bot token the stand-in accepts [${DEFAULT_BOT_TOKEN}]
  --bot-username NAME the bot's username [${DEFAULT_BOT_USERNAME}]
${chatHelp()}`;

function chatHelp(): string {
  return `
In the chat:
  any text              sent to the bot as your message (e.g. /help)
  a line ending in \\    continues on the next line: one message of several lines
  """                   starts a paste (e.g. /addstock 660 """): every line up to a line
                        ending in """ is one message, as when pasting a list of codes
  !N                    press button N of the newest bot message with buttons
  :file PATH [caption]  send a local file as a document (e.g. :file codes.txt /addstock 660)
  :pay                  pay the newest invoice
  /as NAME              speak as NAME (a new person if NAME is new); :as NAME too,
                        /as alone lists who is here
  :help                 this list
  :quit                 stop (Ctrl-D and Ctrl-C too)
With several people, what the bot sends is shown with whom it went to: [NAME] bot: …
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
      username: { type: 'string' },
      users: { type: 'string' },
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
  if (values.username !== undefined && values.users !== undefined)
    throw new UsageError('--username or --users, not both');
  const names = values.users?.split(',').map((n) => n.trim()) ?? [values.username ?? 'sim_user'];
  if (names.some((n) => !NAME.test(n)))
    throw new UsageError(`${values.users ? '--users' : '--username'}: letters, digits and _`);
  if (new Set(names.map((n) => n.toLowerCase())).size !== names.length)
    throw new UsageError('--users: each name once');
  if (!/^\d{1,20}:[A-Za-z0-9_-]{30,}$/.test(values.token))
    throw new UsageError('--token must look like <digits>:<secret of 30+ characters>');
  const firstId = Number(values['user-id']);
  return {
    help: false as const,
    port: Number(values.port),
    users: names.map((name, i) => personNamed(name, firstId + i)),
    token: values.token,
    botUsername: values['bot-username'],
  };
}

/** A Telegram username: what --users and /as take. */
const NAME = /^[A-Za-z0-9_]{1,32}$/;
const personNamed = (name: string, id: number): SimUser & { username: string } => ({
  id,
  username: name,
  first_name: name,
});

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

/**
 * A text longer than one Telegram message, cut at line ends as the Telegram apps cut a long
 * paste (a single line longer than a message is cut where it must).
 */
export function splitForTelegram(text: string, max = MAX_MESSAGE_LENGTH): string[] {
  const parts: string[] = [];
  let part = '';
  for (const line of text.split('\n')) {
    for (let rest = line; ; ) {
      const joined = part === '' ? rest : `${part}\n${rest}`;
      if (joined.length <= max) {
        part = joined;
        break;
      }
      if (part !== '') {
        parts.push(part);
        part = '';
        continue;
      }
      parts.push(rest.slice(0, max));
      rest = rest.slice(max);
      if (rest === '') break;
    }
  }
  if (part.trim() !== '') parts.push(part);
  return parts.filter((p) => p.trim() !== '');
}

/**
 * Gathers typed lines into messages: a line ending in `\` goes on with the next line, and a line
 * ending in `"""` opens a paste that the next line ending in `"""` closes. A shop person pastes a
 * list of codes between the two; without it every pasted line would be a message of its own.
 */
export class LineJoiner {
  private lines: string[] | undefined;
  private mode: 'continued' | 'paste' = 'continued';

  /** True while a message is being gathered (the prompt says so). */
  get open(): boolean {
    return this.lines !== undefined;
  }

  get openPaste(): boolean {
    return this.lines !== undefined && this.mode === 'paste';
  }

  /**
   * The complete message this line ends, if it ends one: `{ text, multiLine }`; a single line
   * (multiLine false) may be one of the chat commands, a gathered message is always text.
   */
  push(raw: string): { text: string; multiLine: boolean } | undefined {
    const line = raw.replace(/\r$/, '');
    const trimmed = line.trim();
    if (this.lines && this.mode === 'paste') {
      if (!trimmed.endsWith('"""')) {
        this.lines.push(line.trimEnd());
        return undefined;
      }
      return this.finish(trimmed.slice(0, -3).trimEnd());
    }
    if (this.lines) {
      if (trimmed.endsWith('\\')) {
        this.lines.push(trimmed.slice(0, -1).trimEnd());
        return undefined;
      }
      return this.finish(trimmed);
    }
    if (trimmed.endsWith('"""')) {
      this.mode = 'paste';
      const head = trimmed.slice(0, -3).trimEnd();
      this.lines = head ? [head] : [];
      return undefined;
    }
    if (trimmed.endsWith('\\')) {
      this.mode = 'continued';
      this.lines = [trimmed.slice(0, -1).trimEnd()];
      return undefined;
    }
    return trimmed ? { text: trimmed, multiLine: false } : undefined;
  }

  private finish(last: string): { text: string; multiLine: boolean } | undefined {
    const lines = [...(this.lines ?? []), last];
    this.lines = undefined;
    // Telegram drops the blank lines around a message, as it drops spaces.
    const text = lines
      .join('\n')
      .replace(/^\s*\n/, '')
      .trimEnd();
    return text.trim() ? { text, multiLine: true } : undefined;
  }
}

/** The people this terminal plays, and who speaks now. */
class Cast {
  readonly people: (SimUser & { username: string })[];
  speaker: SimUser & { username: string };

  constructor(users: (SimUser & { username: string })[]) {
    this.people = [...users];
    this.speaker = users[0]!;
  }

  byId(id: number) {
    return this.people.find((p) => p.id === id);
  }

  /** Speaks as the named person, adding a new one with the next free id when the name is new. */
  speakAs(name: string): { person: SimUser & { username: string }; isNew: boolean } {
    const known = this.people.find((p) => p.username.toLowerCase() === name.toLowerCase());
    const person = known ?? personNamed(name, Math.max(...this.people.map((p) => p.id)) + 1);
    if (!known) this.people.push(person);
    this.speaker = person;
    return { person, isNew: !known };
  }

  /** A line about what happened in a chat, labelled with whose chat once there are several. */
  label(chatId: number, text: string): string {
    const person = this.byId(chatId);
    if (!person) return `(chat ${chatId}) ${text}`;
    return this.people.length > 1 ? `[${person.username}] ${text}` : text;
  }
}

const describePerson = (p: SimUser & { username: string }) => `${p.username} (user ${p.id}, @${p.username})`;

/** What `/as` or `:as` does; answers the line to print. */
function switchSpeaker(cast: Cast, name: string): string {
  if (name === '')
    return `(${cast.people.map((p) => `${p.username}${p === cast.speaker ? ' (speaking)' : ''}`).join(', ')}; /as NAME switches)`;
  if (!NAME.test(name)) return '(a name is letters, digits and _, up to 32)';
  const { person, isNew } = cast.speakAs(name);
  return `(${isNew ? 'a new person: ' : ''}${describePerson(person)} speaks now)`;
}

/** What one typed single line does; answers a line to print, if any. */
async function act(sim: BotApiSim, cast: Cast, line: string): Promise<string | undefined> {
  const user = cast.speaker;
  const chat = () => sim.messages(user.id).filter((m) => m.from_bot && !m.deleted);
  const as = /^[/:]as(?:\s+(.*))?$/.exec(line);
  if (as) return switchSpeaker(cast, as[1]?.trim() ?? '');
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
  return sendLong(sim, user, line);
}

/** Sends a typed text: one message, or several when it is longer than Telegram takes in one. */
async function sendLong(sim: BotApiSim, user: SimUser, text: string): Promise<string | undefined> {
  const parts = splitForTelegram(text);
  if (parts.length === 1) {
    await sim.sendText(user, parts[0]!);
    return undefined;
  }
  await sim.burst(user, parts);
  return `(sent as ${parts.length} messages: Telegram takes at most ${MAX_MESSAGE_LENGTH} characters in one)`;
}

export async function runBotSim(
  argv: string[],
  io: { stdin: Readable & { isTTY?: boolean }; stdout: Writable } = {
    stdin: process.stdin,
    stdout: process.stdout,
  },
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
  const cast = new Cast(parsed.users);
  const sim = await startBotApiSim({ port: parsed.port, token: parsed.token, username: parsed.botUsername });
  // At a terminal the prompt names who speaks; piped (as tests run it) there is no prompt.
  const tty = io.stdin.isTTY === true;
  const rl = createInterface({ input: io.stdin, ...(tty ? { output: io.stdout } : {}), terminal: tty });
  const joiner = new LineJoiner();
  const prompt = () => {
    if (!tty) return;
    rl.setPrompt(`${cast.speaker.username}${joiner.open ? '…' : '>'} `);
    rl.prompt(true);
  };
  const print = (text: string) => {
    if (tty) {
      clearLine(io.stdout, 0);
      cursorTo(io.stdout, 0);
    }
    io.stdout.write(`${text}\n`);
    prompt();
  };
  printBanner(sim, cast, print);
  let lastPresser: number | undefined;
  sim.on((e) => {
    const text = describeEvent(e);
    // A button's notice goes to whoever pressed it; the bot may also write to chats of people
    // this terminal does not play (a test's pushUpdate): say whose.
    const chatId = e.type === 'callback_answer' ? (lastPresser ?? cast.speaker.id) : e.message.chat_id;
    if (text) print(cast.label(chatId, text));
  });

  // One message at a time, in order: a :pay waits for the bot's answer before the next goes.
  let queue = Promise.resolve();
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    if (joiner.open)
      print(`(the message being typed was not finished${joiner.openPaste ? ' with """' : ''}: not sent)`);
    rl.close();
    // An open stdin pipe would keep the process alive after :quit: let go of it.
    io.stdin.destroy();
    void queue.then(() => sim.close());
  };
  rl.on('line', (raw) => {
    if (stopping) return;
    const message = joiner.push(raw);
    if (!message) return prompt();
    if (!message.multiLine && message.text === ':quit') return stop();
    queue = queue.then(async () => {
      try {
        if (message.text.startsWith('!')) lastPresser = cast.speaker.id;
        const answer = message.multiLine
          ? await sendLong(sim, cast.speaker, message.text)
          : await act(sim, cast, message.text);
        if (answer) print(answer);
        else prompt();
      } catch (err) {
        print(`(error: ${(err as Error).message})`);
      }
    });
  });
  rl.on('close', stop);
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

function printBanner(sim: BotApiSim, cast: Cast, print: (text: string) => void): void {
  print(`Bot API stand-in listening on ${sim.url} (bot @${sim.bot.username}, id ${sim.bot.id})`);
  print('Start the service in another terminal with:');
  print(`  BOT_TOKEN=${sim.token} BOT_API_ROOT=${sim.url} npm start`);
  const [first] = cast.people;
  if (cast.people.length === 1)
    print(
      `You are user ${first!.id} (@${first!.username}) in a private chat with the bot. To link yourself,`,
    );
  else {
    print(`You play ${cast.people.length} people, each in a private chat with the bot:`);
    print(`  ${cast.people.map(describePerson).join(', ')}`);
    print(`${first!.username} speaks first; /as NAME switches. To link a person,`);
  }
  print(
    'have the operator make a link (redeem-gateway admin bot link …) and type the /start <token> it gives.',
  );
  print('Type :help for the chat commands.');
}
