// What the admin CLI prints to an operator's terminal: stored text a merchant wrote (a redeem's
// `reference`, a customer's name, a webhook URL) may hold terminal control sequences that would
// rewrite the screen (ESC [ … , OSC 8 links, a CSI in C1 form, bidirectional overrides that
// reorder what is shown). Human output has every such character removed, line by line; `--json`
// output keeps the text exact but escapes the C1 and bidi characters JSON.stringify leaves raw.

// C0 controls (but tab), DEL, C1 controls, and the Unicode bidi embeddings/overrides/isolates.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const UNSAFE = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const RAW_IN_JSON = /[\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** One line of human output with every control character removed. */
export const printableLine = (line: string): string => line.replace(UNSAFE, '');

/** Lines of human output, each made printable, joined with newlines. */
export const printableLines = (lines: readonly string[]): string => lines.map(printableLine).join('\n');

/** JSON text (from JSON.stringify) with the characters it leaves raw escaped: still the same JSON. */
export const printableJson = (json: string): string =>
  json.replace(RAW_IN_JSON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
