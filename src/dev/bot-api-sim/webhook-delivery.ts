// One update POSTed to the bot's webhook as Telegram sends it: JSON, with the secret in
// X-Telegram-Bot-Api-Secret-Token, retried a few times when the answer is not 2xx or the
// connection fails (Telegram retries too, then moves on).
import { setTimeout as sleep } from 'node:timers/promises';

/** Waits between attempts; after the last the update is dropped (counted in last_error_*). */
const RETRY_DELAYS_MS = [200, 500, 1000, 2000];
const TIMEOUT_MS = 10_000;

export async function deliverUpdate(
  hook: { url: string; secret?: string },
  update: unknown,
  opts: { stillWanted: () => boolean; failed: (message: string) => void },
): Promise<boolean> {
  for (let attempt = 0; ; attempt++) {
    try {
      const res = await fetch(hook.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(hook.secret ? { 'x-telegram-bot-api-secret-token': hook.secret } : {}),
        },
        body: JSON.stringify(update),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      await res.arrayBuffer();
      if (res.ok) return true;
      opts.failed(`Wrong response from the webhook: ${res.status} ${res.statusText}`);
    } catch (err) {
      opts.failed(`Connection failed: ${(err as Error).message}`);
    }
    const delay = RETRY_DELAYS_MS[attempt];
    if (delay === undefined || !opts.stillWanted()) return false;
    await sleep(delay);
  }
}
