// The Bot API's methods for how updates reach the bot: getUpdates (long polling) and the
// webhook's setWebhook, deleteWebhook and getWebhookInfo, checked as Telegram checks them.
import { ApiError } from './api-error.ts';
import type { Params } from './params.ts';
import type { Json } from './telegram-objects.ts';
import type { World } from './world.ts';

export function setWebhook(w: World, p: Params): true {
  const url = p.str('url') ?? '';
  // An empty url removes the webhook, as deleteWebhook does.
  if (url === '') {
    w.webhook.delete(p.bool('drop_pending_updates'));
    return true;
  }
  // Telegram wants HTTPS; the stand-in also takes http://, since its webhooks are local listeners.
  if (!/^https?:\/\/[^/\s]+/i.test(url)) throw new ApiError(400, 'Bad Request: bad webhook: invalid URL');
  const secret = p.str('secret_token');
  if (secret !== undefined && !/^[A-Za-z0-9_-]{1,256}$/.test(secret))
    throw new ApiError(400, 'Bad Request: secret token contains unallowed characters');
  const maxConnections = p.int('max_connections') ?? 40;
  if (maxConnections < 1 || maxConnections > 100)
    throw new ApiError(400, 'Bad Request: max_connections must be between 1 and 100');
  w.webhook.set(url, secret, p.bool('drop_pending_updates'), maxConnections);
  return true;
}

export function getWebhookInfo(w: World): Json {
  return {
    url: w.webhook.target?.url ?? '',
    has_custom_certificate: false,
    pending_update_count: w.updates.pendingCount,
    ...(w.webhook.target ? { max_connections: w.webhook.maxConnections, ip_address: '127.0.0.1' } : {}),
    ...(w.webhook.lastError
      ? { last_error_date: w.webhook.lastError.date, last_error_message: w.webhook.lastError.message }
      : {}),
  };
}

export function getUpdates(w: World, p: Params, signal: AbortSignal): Promise<unknown> {
  const allowed = p.json('allowed_updates');
  return w.updates.getUpdates({
    offset: p.int('offset') ?? 0,
    limit: p.int('limit') ?? 100,
    timeout: p.int('timeout') ?? 0,
    ...(Array.isArray(allowed) ? { allowed: allowed.map(String) } : {}),
    signal,
  });
}

export function deleteWebhook(w: World, p: Params): true {
  w.webhook.delete(p.bool('drop_pending_updates'));
  return true;
}
