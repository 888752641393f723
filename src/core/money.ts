// Money is integer micro-dollars. These are the only conversions to and from USD text.

export const MICROS_PER_USD = 1_000_000;

/**
 * The largest amount parseUsd accepts: one billion USD. Micro-dollars must stay exact JS integers
 * (below 2^53, about 9e15) through sums and products, and every read of an int8 checks that.
 */
export const MAX_AMOUNT_MICROS = 1_000_000_000 * MICROS_PER_USD;

/** 12500000 → "12.5"; 3500 → "0.0035"; 0 → "0". At most 6 decimals, no trailing zeros. */
export function formatUsd(micros: number): string {
  if (!Number.isSafeInteger(micros)) throw new Error('money must be an integer number of micro-dollars');
  const sign = micros < 0 ? '-' : '';
  const abs = Math.abs(micros);
  const whole = Math.floor(abs / MICROS_PER_USD);
  const frac = String(abs % MICROS_PER_USD)
    .padStart(6, '0')
    .replace(/0+$/, '');
  return `${sign}${whole}${frac ? `.${frac}` : ''}`;
}

/** 12500000 → "12.50"; 3500 → "0.0035"; 0 → "0.00": 2 to 6 decimals, as the chat bot writes money (docs/reference/bot.md#replies). */
export function usdText(micros: number): string {
  const [whole, frac = ''] = formatUsd(micros).split('.');
  return `${whole}.${frac.padEnd(2, '0')}`;
}

/** The JSON number for a USD amount (parsed from the exact decimal text, never computed in floats). */
export const usdNumber = (micros: number): number => Number(formatUsd(micros));

/**
 * Parses a non-negative USD amount given as a JSON number or a decimal string with at most
 * 6 decimals, up to MAX_AMOUNT_MICROS. Returns null when it is not one. A JS number's shortest
 * text form is exact for values with up to 6 decimals, so `0.1` is read as the text "0.1",
 * never as a float sum.
 */
export function parseUsd(value: unknown): number | null {
  let text: string;
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0) return null;
    text = String(value);
  } else if (typeof value === 'string') {
    text = value.trim();
  } else {
    return null;
  }
  const m = /^(\d{1,12})(?:\.(\d{1,6}))?$/.exec(text);
  if (!m) return null;
  const micros = Number(m[1]) * MICROS_PER_USD + Number((m[2] ?? '').padEnd(6, '0'));
  return micros <= MAX_AMOUNT_MICROS ? micros : null;
}
