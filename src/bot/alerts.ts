// The alert loop's pass (docs/reference/bot.md#alerts): the alerts that started (core/bot/alerts.ts) sent to the
// owners' chats, and live top-up requests past their 7 days expired with a line to who asked.
import type { Api } from 'grammy';
import { alertPass } from '../core/bot/alerts.ts';
import { expireTopups } from '../core/bot/topup-endings.ts';
import type { ServerContext } from '../http/context.ts';
import { errorInfo } from './progress.ts';
import { usdText } from './replies.ts';

export async function sendAlerts(app: ServerContext, api: Api): Promise<void> {
  const now = app.clock.now();
  const lines = await alertPass(app.db, now);
  for (const r of await expireTopups(app.db, now))
    lines.push({
      chatId: r.chatId,
      text: `[${r.mode}]\nYour top-up request ${r.id} expired after 7 days: nothing was charged.\namount_usd: ${usdText(r.usdMicros)}`,
    });
  for (const line of lines)
    await api
      .sendMessage(line.chatId, line.text)
      .catch((err: unknown) => app.logger.warn({ err: errorInfo(err) }, 'bot: could not send an alert'));
}
