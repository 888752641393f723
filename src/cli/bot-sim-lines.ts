// What a person types in bot-sim, into Telegram messages: typed lines gathered into one message
// (a line continued with \, or a paste between two """), and a message longer than Telegram takes
// cut into several, as the Telegram apps cut a long paste.
import { MAX_MESSAGE_LENGTH } from '../dev/bot-api-sim.ts';

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
