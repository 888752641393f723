// Webhook registrations (docs/reference/webhooks-and-events.md#registration): one per customer and mode. The secret is shown
// once, in the registration answer, and kept encrypted at rest because it signs deliveries:
// under its own subkey, bound to its customer and mode (code-crypto.ts).
import type { Database, Queryable } from '../../db/database.ts';
import type { Clock } from '../clock.ts';
import { decryptSecret, encryptSecret } from '../crypto/code-crypto.ts';
import { ApiError } from '../errors.ts';
import { newWebhookSecret } from '../ids.ts';
import type { Actor } from '../operators/actor.ts';
import { recordAudit } from '../operators/audit.ts';
import type { Mode } from '../vocabulary.ts';
import { maskWebhookUrl } from './event-overview.ts';
import { type LookupFn, parseWebhookUrl, resolveWebhookTarget } from './url-guard.ts';

export const SIGNATURE_NOTE =
  'Each delivery carries SVC-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>." followed by the raw ' +
  'body bytes, keyed with this whole secret string as UTF-8>. Compare in constant time and refuse a t more ' +
  'than 300 seconds from your clock. SVC-Delivery-Id is the event id, the same on every retry. The secret ' +
  'is shown only now; registering again replaces it.';

const KNOWN_FIELDS = new Set(['url']);

export interface Caller {
  customerId: number;
  mode: Mode;
}

export interface Registration {
  url: string;
  secret: string;
}

export interface RegisterDeps {
  db: Queryable;
  clock: Clock;
  codeKey: Buffer;
  allowPrivate: boolean;
  lookup?: LookupFn;
}

/** Validates the request body in the documented order; returns the URL string to store. */
export async function validateRegistration(
  body: unknown,
  opts: { allowPrivate: boolean; lookup?: LookupFn; lookupKey?: string },
): Promise<string> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ApiError('bad_request', 'body must be a JSON object with a url');
  }
  for (const field of Object.keys(body)) {
    if (!KNOWN_FIELDS.has(field)) throw new ApiError('bad_request', `unknown field "${field}"`);
  }
  const raw = (body as { url?: unknown }).url;
  const url = parseWebhookUrl(raw);
  await resolveWebhookTarget(url, {
    allowPrivate: opts.allowPrivate,
    lookup: opts.lookup,
    lookupKey: opts.lookupKey,
  });
  // Stored as sent: that is the URL the caller registered and sees in the answer.
  return raw as string;
}

/** Registers or replaces (URL and secret together, in one statement) the caller's webhook. */
export async function registerWebhook(
  deps: RegisterDeps,
  caller: Caller,
  body: unknown,
): Promise<Registration> {
  const url = await validateRegistration(body, {
    allowPrivate: deps.allowPrivate,
    lookup: deps.lookup,
    // The resolver's turns go round-robin by customer (docs/reference/webhooks-and-events.md#fair-delivery).
    lookupKey: `customer:${caller.customerId}`,
  });
  const secret = newWebhookSecret();
  await deps.db.query(
    `insert into webhooks (customer_id, mode, url, secret_encrypted, created_at)
     values ($1, $2, $3, $4, $5)
     on conflict (customer_id, mode) do update
       set url = excluded.url, secret_encrypted = excluded.secret_encrypted, created_at = excluded.created_at`,
    [caller.customerId, caller.mode, url, encryptSecret(deps.codeKey, secret, caller), deps.clock.now()],
  );
  // A new receiver starts with a clean record: a merchant who fixed its endpoint is not held back.
  await deps.db.query('delete from webhook_receiver_health where customer_id = $1 and mode = $2', [
    caller.customerId,
    caller.mode,
  ]);
  return { url, secret };
}

/** The registration current now for a customer and mode, with its secret decrypted; or null. */
export async function loadRegistration(
  q: Queryable,
  codeKey: Buffer,
  caller: Caller,
): Promise<Registration | null> {
  const r = await q.query<{ url: string; secretEncrypted: string }>(
    `select url, secret_encrypted as "secretEncrypted" from webhooks where customer_id = $1 and mode = $2`,
    [caller.customerId, caller.mode],
  );
  const row = r.rows[0];
  return row ? { url: row.url, secret: decryptSecret(codeKey, row.secretEncrypted, caller) } : null;
}

/**
 * Removes a customer's webhook of one mode (the operator's `DELETE
 * /admin/v1/customers/{id}/webhooks/{mode}`): the URL, its secret and its receiver's record, with
 * the audit row, in one transaction. The public API has no way to remove one (the specification
 * and contract give `POST /v1/webhook` a required `url`), so a merchant asks the operator, and a
 * tutorial that registers a receiver on a gateway of one's own removes it this way. From then on
 * ending jobs write no event for that mode; events already pending are dropped at their next
 * attempt ("no webhook registered any more") and stay readable in the event log. Returns the
 * removed URL with its query values masked, or null when none was registered.
 */
export async function removeWebhook(
  db: Database,
  clock: Clock,
  actor: Actor,
  caller: Caller,
): Promise<{ url: string } | null> {
  return db.transaction(async (tx) => {
    const r = await tx.query<{ url: string }>(
      'delete from webhooks where customer_id = $1 and mode = $2 returning url',
      [caller.customerId, caller.mode],
    );
    const row = r.rows[0];
    if (!row) return null;
    await tx.query('delete from webhook_receiver_health where customer_id = $1 and mode = $2', [
      caller.customerId,
      caller.mode,
    ]);
    const url = maskWebhookUrl(row.url);
    await recordAudit(
      tx,
      actor,
      {
        action: 'webhook.remove',
        customerId: caller.customerId,
        target: caller.mode,
        details: { mode: caller.mode, url },
      },
      clock,
    );
    return { url };
  });
}
