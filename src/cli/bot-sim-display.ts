// How what the bot does in a chat reads in bot-sim's terminal: its messages (text, documents,
// invoices with their amounts), their buttons numbered for !N, edits, deletions and notices.
import { buttonsOf, type SimEvent, type SimMessage } from '../dev/bot-api-sim.ts';

/** Amounts of an invoice are in the currency's smallest unit; most currencies have 2 decimals. */
const ZERO_DECIMAL = new Set(['XTR', 'JPY', 'KRW', 'VND', 'CLP', 'ISK', 'UGX', 'PYG']);
export function money(amount: number, currency: string): string {
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
