// /addstock <category> (docs/reference/bot.md#commands): codes in the same message, or in a .txt/.csv document of
// up to 4 MiB whose caption is the command, imported into the person's mode with the admin
// import's rules (the same file reading, core/stock/import-lines.ts, and the same core call,
// audited as telegram:<id>), in the update's own transaction. The reply names the rejected and
// duplicate lines (at most 20, then a count); it and the log hold no code. The message that held
// the codes leaves the chat by the one rule for codes (bot/codes-in-chat.ts).
import { Composer } from 'grammy';
import { telegramActor } from '../../core/bot/links.ts';
import { CATEGORIES } from '../../core/stock/catalog.ts';
import type { ImportIssue } from '../../core/stock/import-issues.ts';
import { type CodeLine, codeLines, isCsvName } from '../../core/stock/import-lines.ts';
import { importStockIn } from '../../core/stock/stock-changes.ts';
import { actOnce, type BotContext, personOf } from '../context.ts';
import { badInput, inMode, labelled } from '../replies.ts';

export const MAX_BOT_IMPORT_CODES = 8000;
export const MAX_DOCUMENT_BYTES = 4 * 1024 * 1024;
const EXAMPLE = '/addstock 660 CODE1 CODE2 (or a .txt/.csv file with the caption /addstock 660)';

/** Codes in a message's text, each with its line in the message: one per line, or separated by spaces or commas. */
export function codesInText(text: string): CodeLine[] {
  return text
    .split(/\r?\n/)
    .flatMap((row, i) => row.split(/[\s,]+/).flatMap((code) => (code ? [{ line: i + 1, code }] : [])));
}

/** Issues named in a reply, at most; the rest are counted. */
const LISTED_ISSUES = 20;

/**
 * /addstock, and every document: a file is read only with its caption /addstock <category>; any
 * other file is answered here and not read (a file of codes leaves the chat whatever it holds).
 */
export const addStockFeature = new Composer<BotContext>();
addStockFeature.command('addstock', (c) => addStock(c, c.match, null));
addStockFeature.on('message:document', async (c) => {
  const caption = c.message.caption ?? '';
  const m = /^\/addstock(?:@\w+)?(?:\s+([\s\S]*))?$/.exec(caption.trim());
  if (!m) {
    // A file of codes without its command: it leaves the chat (the rule for codes) and is not read.
    if ((await actOnce(c, 'addstock', async () => true)) !== null)
      await c.reply(badInput('a file is read only with its caption /addstock <category>', EXAMPLE));
    return;
  }
  await addStock(c, m[1] ?? '', c.message.document);
});

async function addStock(
  c: BotContext,
  args: string,
  document: { file_id: string; file_name?: string; file_size?: number } | null,
) {
  const person = personOf(c);
  const [category = ''] = args.trim().split(/\s+/);
  const refuse = async (line: string) => {
    if ((await actOnce(c, 'addstock', async () => true)) !== null) await c.reply(line);
  };
  if (!CATEGORIES.includes(category))
    return refuse(
      badInput(`unknown category "${category.slice(0, 12)}" (one of ${CATEGORIES.join(', ')})`, EXAMPLE),
    );
  let read: CodeLine[];
  if (document) {
    const name = document.file_name ?? '';
    if (!/\.(txt|csv)$/i.test(name)) return refuse(badInput('the file must be a .txt or .csv file', EXAMPLE));
    if ((document.file_size ?? 0) > MAX_DOCUMENT_BYTES)
      return refuse('The file is over 4 MiB: split it and send the parts.');
    const text = await downloadFile(c, document.file_id);
    if (text === null) return refuse('The file could not be read from Telegram; send it again.');
    read = codeLines(text, { csv: isCsvName(name) });
  } else {
    // The command and its category are the first two words of line 1.
    read = codesInText(c.message!.text ?? '').slice(2);
  }
  const codes = read.map((x) => x.code);
  if (codes.length === 0) return refuse(badInput('no codes given', EXAMPLE));
  if (codes.length > MAX_BOT_IMPORT_CODES)
    return refuse(
      `Too many codes (${codes.length}): at most ${MAX_BOT_IMPORT_CODES} per import; split them.`,
    );
  const result = await actOnce(c, 'addstock', (tx) =>
    importStockIn(tx, c.app, telegramActor(person.telegramUserId, c.requestId), {
      customerId: person.customerId,
      mode: person.mode,
      category,
      codes,
    }),
  );
  if (!result) return;
  c.app.logger.info(
    {
      customerId: person.customerId,
      mode: person.mode,
      category,
      added: result.added,
      duplicates: result.duplicates,
      rejected: result.rejected,
    },
    'bot stock import',
  );
  await c.reply(
    inMode(
      person.mode,
      `stock import into ${category}`,
      labelled([
        ['added', result.added],
        ['duplicates', result.duplicates],
        ['rejected', result.rejected],
      ]),
      issueLines(result.issues, read),
    ),
  );
}

/** `line N: rejected, <reason>` per issue, by the line the code came from; at most 20, then a count. */
function issueLines(issues: readonly ImportIssue[], read: readonly CodeLine[]): string {
  const listed = issues
    .slice(0, LISTED_ISSUES)
    .map((x) => `line ${read[x.index]?.line ?? x.index + 1}: ${x.kind}, ${x.reason}`);
  if (issues.length > LISTED_ISSUES) listed.push(`and ${issues.length - LISTED_ISSUES} more`);
  return listed.join('\n');
}

/** The document's text, fetched from the Bot API's file endpoint (at most 4 MiB); null on failure. */
async function downloadFile(c: BotContext, fileId: string): Promise<string | null> {
  try {
    const file = await c.api.getFile(fileId);
    if (!file.file_path || (file.file_size ?? 0) > MAX_DOCUMENT_BYTES) return null;
    const { BOT_API_ROOT, BOT_TOKEN } = c.app.config;
    const res = await fetch(`${BOT_API_ROOT}/file/bot${BOT_TOKEN}/${file.file_path}`, {
      signal: AbortSignal.timeout(30_000),
    });
    if (!res.ok || !res.body) return null;
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body) {
      size += chunk.length;
      if (size > MAX_DOCUMENT_BYTES) return null;
      chunks.push(Buffer.from(chunk));
    }
    return Buffer.concat(chunks).toString('utf8');
  } catch (err) {
    // The URL holds the token: log the error's kind, never the URL.
    c.app.logger.warn({ errName: (err as Error)?.name }, 'bot document download failed');
    return null;
  }
}
