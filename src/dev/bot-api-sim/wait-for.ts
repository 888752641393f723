// waitFor: polls a test's probe until it answers, and on a timeout says what the chats and the
// Bot API calls last were, so a failing test shows where the conversation stopped.
import type { CallRecord } from './http.ts';
import type { World } from './world.ts';

export async function waitFor<T>(
  world: World,
  calls: CallRecord[],
  probe: () => T | undefined | false | null,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = probe();
      if (value) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() >= deadline) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const recent = world.messages
    .slice(-6)
    .map(
      (m) =>
        `  chat ${m.chat_id} #${m.message_id} ${m.from_bot ? 'bot' : 'user'}${m.deleted ? ' (deleted)' : ''}: ${JSON.stringify(m.text ?? m.caption ?? (m.invoice ? `[invoice ${m.invoice.title}]` : '[no text]'))}`,
    )
    .join('\n');
  const lastCalls = calls
    .slice(-6)
    .map((c) => `${c.method}${c.error_code ? ` (${c.error_code})` : ''}`)
    .join(', ');
  throw new Error(
    `waitFor: nothing within ${timeoutMs} ms${lastError ? ` (the probe last threw: ${(lastError as Error).message})` : ''}\n` +
      `last messages:\n${recent || '  none'}\nlast Bot API calls: ${lastCalls || 'none'}; updates queued: ${world.updates.pendingCount}`,
  );
}
