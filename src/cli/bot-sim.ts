// `redeem-gateway bot-sim`: the Bot API stand-in (src/dev/bot-api-sim.ts) with a chat in the
// terminal, so a person can try the bot with no Telegram and no network (docs/reference/bot.md#trying-it-without-telegram). Reads
// lines from stdin whether or not it is a terminal (tests pipe it), writes plain text. Here are
// the options and the chat loop; bot-sim-lines.ts gathers typed lines into messages,
// bot-sim-display.ts shows what the bot does, bot-sim-cast.ts keeps the people played.
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
  type SimUser,
  startBotApiSim,
} from '../dev/bot-api-sim.ts';
import { Cast, describePerson, NAME, personNamed, switchSpeaker } from './bot-sim-cast.ts';
import { describeEvent, money } from './bot-sim-display.ts';
import { LineJoiner, splitForTelegram } from './bot-sim-lines.ts';

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
