// Who may use the chat bot (docs/reference/bot.md#links-and-roles): single-use link tokens the operator issues, and the
// Telegram users bound with them, each to one customer as owner or staff. The token is shown once
// and stored only as its sha256; the binding, its link's use and the audit row are one commit.
import { createHash } from 'node:crypto';
import type { Queryable } from '../../db/database.ts';
import { type Clock, isoUtc } from '../clock.ts';
import { ApiError } from '../errors.ts';
import { randomBase62 } from '../ids.ts';
import type { Actor } from '../operators/actor.ts';
import { recordAudit } from '../operators/audit.ts';
import type { Mode } from '../vocabulary.ts';
import { voidPendingTopups } from './topup-endings.ts';

export type BotRole = 'owner' | 'staff';
export const BOT_ROLES: readonly BotRole[] = ['owner', 'staff'];
export const LINK_TTL_MS = 24 * 3600 * 1000;

const tokenHash = (token: string) => createHash('sha256').update(token).digest('hex');

/** The actor of a change made from the chat: audit rows name it `telegram:<user id>`. */
export function telegramActor(telegramUserId: number, requestId: string): Actor {
  const name = `telegram:${telegramUserId}`;
  return { operatorId: name, name, role: 'admin', requestId, ip: 'telegram' };
}

/** Issues a link for `role` (POST /admin/v1/customers/{id}/bot-links). The token is returned once. */
export async function createBotLink(
  deps: { db: { transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> }; clock: Clock },
  actor: Actor,
  input: { customerId: number; role: BotRole; botUsername: string },
) {
  const token = randomBase62(40);
  const id = `bl_${randomBase62(24)}`;
  const now = deps.clock.now();
  const expiresAt = new Date(now.getTime() + LINK_TTL_MS);
  return deps.db.transaction(async (tx) => {
    const customer = await tx.query('select 1 from customers where id = $1', [input.customerId]);
    if (customer.rows.length === 0) throw new ApiError('not_found', 'unknown customer');
    await tx.query(
      `insert into bot_links (id, customer_id, role, token_hash, created_at, expires_at, created_by)
       values ($1, $2, $3, $4, $5, $6, $7)`,
      [id, input.customerId, input.role, tokenHash(token), now, expiresAt, actor.name],
    );
    await recordAudit(
      tx,
      actor,
      { action: 'bot.link', customerId: input.customerId, target: id, details: { role: input.role } },
      deps.clock,
    );
    return {
      link_id: id,
      token,
      url: `https://t.me/${input.botUsername}?start=${token}`,
      expires_at: isoUtc(expiresAt),
    };
  });
}

export type BindResult =
  | { kind: 'bound'; customerName: string; role: BotRole; customerId: number }
  | { kind: 'unknown' | 'used' | 'expired' | 'other_customer' | 'disabled' };

/**
 * `/start <token>`: binds the Telegram user to the link's customer with its role, using the link.
 * Runs in the update's own transaction (the caller records the update there too). A user bound to
 * the same customer already takes the new role; one bound to another customer is refused.
 */
export async function bindWithToken(
  tx: Queryable,
  clock: Clock,
  input: {
    token: string;
    telegramUserId: number;
    chatId: number;
    username: string | null;
    requestId: string;
  },
): Promise<BindResult> {
  const now = clock.now();
  // The link's customer first (a read, on Citus of every worker: binding is rare), then its row
  // locked on that customer's worker (docs/running/citus.md#one-worker-per-statement).
  const owner = (
    await tx.query<{ customerId: number }>(
      'select customer_id as "customerId" from bot_links where token_hash = $1',
      [tokenHash(input.token)],
    )
  ).rows[0];
  if (!owner) return { kind: 'unknown' };
  const link = (
    await tx.query<{
      id: string;
      customerId: number;
      role: BotRole;
      expiresAt: Date;
      usedAt: Date | null;
      customerName: string;
      disabled: boolean;
    }>(
      `select l.id, l.customer_id as "customerId", l.role, l.expires_at as "expiresAt", l.used_at as "usedAt",
              c.name as "customerName", c.disabled_at is not null as disabled
         from bot_links l join customers c on c.id = l.customer_id
        where l.customer_id = $2 and c.id = $2 and l.token_hash = $1
        for update of l`,
      [tokenHash(input.token), owner.customerId],
    )
  ).rows[0];
  if (!link) return { kind: 'unknown' };
  if (link.usedAt) return { kind: 'used' };
  if (new Date(link.expiresAt).getTime() <= now.getTime()) return { kind: 'expired' };
  if (link.disabled) return { kind: 'disabled' };
  // A person is bound to one customer at a time. The binding's key holds that within a customer;
  // across customers this lock on the person does (every binding is made here, under it), and
  // the look below may ask every worker on Citus.
  await tx.query("select pg_advisory_xact_lock(hashtextextended('bot_user:' || $1::text, 7203118452))", [
    input.telegramUserId,
  ]);
  const current = (
    await tx.query<{ id: string; customerId: number; role: BotRole }>(
      `select id, customer_id as "customerId", role from bot_users where telegram_user_id = $1 and unbound_at is null`,
      [input.telegramUserId],
    )
  ).rows[0];
  if (current && Number(current.customerId) !== Number(link.customerId)) return { kind: 'other_customer' };
  await tx.query('update bot_links set used_at = $3, used_by = $4 where customer_id = $1 and id = $2', [
    link.customerId,
    link.id,
    now,
    input.telegramUserId,
  ]);
  // The person's pending top-ups were theirs as an owner of that customer: bound elsewhere, or
  // again as staff, they can no longer be paid or approved.
  const nowStaff = current !== undefined && current.role === 'owner' && link.role !== 'owner';
  const voided = await voidPendingTopups(tx, now, {
    telegramUserId: input.telegramUserId,
    ...(nowStaff ? {} : { exceptCustomerId: Number(link.customerId) }),
    decidedBy: `telegram:${input.telegramUserId}`,
    why: nowStaff ? 'the person was bound again as staff' : 'the person was bound to another customer',
  });
  let userId: string;
  // Bound again: the binding is updated, unless it was unbound meanwhile (then a new one).
  const again = current
    ? await tx.query(
        `update bot_users set role = $3, chat_id = $4, username = $5, link_id = $6, last_seen_at = $7
          where customer_id = $1 and id = $2 and unbound_at is null`,
        [current.customerId, current.id, link.role, input.chatId, input.username, link.id, now],
      )
    : null;
  if (current && again?.rowCount === 1) {
    userId = current.id;
  } else {
    userId = `bu_${randomBase62(24)}`;
    await tx.query(
      `insert into bot_users (id, customer_id, telegram_user_id, chat_id, username, role, link_id, bound_at, last_seen_at)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $8)`,
      [userId, link.customerId, input.telegramUserId, input.chatId, input.username, link.role, link.id, now],
    );
  }
  await recordAudit(
    tx,
    telegramActor(input.telegramUserId, input.requestId),
    {
      action: 'bot.bind',
      customerId: Number(link.customerId),
      target: userId,
      details: {
        role: link.role,
        link_id: link.id,
        telegram_user_id: input.telegramUserId,
        ...(voided.length ? { voided_topups: voided } : {}),
      },
    },
    clock,
  );
  return {
    kind: 'bound',
    customerName: link.customerName,
    role: link.role,
    customerId: Number(link.customerId),
  };
}

/** A bound Telegram user as the bot acts for them. */
export interface BotUser {
  id: string;
  customerId: number;
  customerName: string;
  customerDisabled: boolean;
  telegramUserId: number;
  chatId: number;
  role: BotRole;
  mode: Mode;
}

/** The columns of a BotUser, over `bot_users u join customers c`. */
export const BOT_USER_COLUMNS = `u.id, u.customer_id as "customerId", c.name as "customerName",
  c.disabled_at is not null as "customerDisabled", u.telegram_user_id as "telegramUserId", u.chat_id as "chatId",
  u.role, u.mode`;

export function botUserFrom<T extends BotUser>(row: T): T {
  return {
    ...row,
    customerId: Number(row.customerId),
    telegramUserId: Number(row.telegramUserId),
    chatId: Number(row.chatId),
  };
}

/**
 * The binding of a Telegram user, if any; its last_seen_at moved to now. The update names the
 * customer, so on Citus it runs on that customer's worker alone (docs/running/citus.md#the-bot):
 * `customerId` is the one the caller saw last for this person; without it, or when the person is
 * no longer bound there, the customer is read first (a read that asks every worker).
 */
export async function touchBotUser(
  q: Queryable,
  telegramUserId: number,
  now: Date,
  customerId?: number,
): Promise<BotUser | null> {
  const touch = async (customer: number) => {
    const r = await q.query<BotUser>(
      `update bot_users u set last_seen_at = $2 from customers c
        where u.customer_id = $3 and c.id = $3 and u.telegram_user_id = $1 and u.unbound_at is null
       returning ${BOT_USER_COLUMNS}`,
      [telegramUserId, now, customer],
    );
    return r.rows[0] ? botUserFrom(r.rows[0]) : null;
  };
  const known = customerId === undefined ? null : await touch(customerId);
  if (known) return known;
  const bound = await q.query<{ customerId: string }>(
    'select customer_id as "customerId" from bot_users where telegram_user_id = $1 and unbound_at is null',
    [telegramUserId],
  );
  const customer = bound.rows[0] ? Number(bound.rows[0].customerId) : null;
  return customer === null ? null : touch(customer);
}

export async function setBotUserMode(
  q: Queryable,
  person: { id: string; customerId: number },
  mode: Mode,
): Promise<void> {
  await q.query('update bot_users set mode = $3 where customer_id = $1 and id = $2', [
    person.customerId,
    person.id,
    mode,
  ]);
}

/** GET /admin/v1/customers/{id}/bot-users: the people bound now. */
export async function listBotUsers(q: Queryable, customerId: number) {
  const r = await q.query<{
    id: string;
    telegramUserId: string;
    username: string | null;
    role: BotRole;
    boundAt: Date;
    lastSeenAt: Date | null;
  }>(
    `select id, telegram_user_id as "telegramUserId", username, role, bound_at as "boundAt",
            last_seen_at as "lastSeenAt"
       from bot_users where customer_id = $1 and unbound_at is null order by bound_at, id`,
    [customerId],
  );
  return r.rows.map((u) => ({
    user_id: u.id,
    telegram_user_id: Number(u.telegramUserId),
    username: u.username,
    role: u.role,
    bound_at: isoUtc(u.boundAt),
    last_seen_at: u.lastSeenAt ? isoUtc(u.lastSeenAt) : null,
  }));
}

/** POST /admin/v1/bot-users/{id}/unbind: from now on the person is unlinked. Audited. */
export async function unbindBotUser(
  deps: { db: { transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> }; clock: Clock },
  actor: Actor,
  userId: string,
) {
  return deps.db.transaction(async (tx) => {
    // The binding's customer first, then the change on that customer's worker alone.
    const owner = await tx.query<{ customerId: string }>(
      'select customer_id as "customerId" from bot_users where id = $1',
      [userId],
    );
    const r = await tx.query<{ customerId: number; telegramUserId: string; chatId: string; role: BotRole }>(
      `update bot_users set unbound_at = $2 where customer_id = $3 and id = $1 and unbound_at is null
       returning customer_id as "customerId", telegram_user_id as "telegramUserId", chat_id as "chatId", role`,
      [userId, deps.clock.now(), owner.rows[0]?.customerId ?? null],
    );
    const row = r.rows[0];
    if (!row) throw new ApiError('not_found', 'unknown or already unbound bot user');
    // What the person asked for as this customer's owner is void once they are not linked.
    const voided = await voidPendingTopups(tx, deps.clock.now(), {
      customerId: Number(row.customerId),
      telegramUserId: Number(row.telegramUserId),
      decidedBy: actor.name,
      why: 'the person was unbound',
    });
    await recordAudit(
      tx,
      actor,
      {
        action: 'bot.unbind',
        customerId: Number(row.customerId),
        target: userId,
        details: {
          role: row.role,
          telegram_user_id: Number(row.telegramUserId),
          ...(voided.length ? { voided_topups: voided } : {}),
        },
      },
      deps.clock,
    );
    return { user_id: userId, customer_id: Number(row.customerId), chatId: Number(row.chatId) };
  });
}

/** The private chat and role of everyone linked now (their command menus). */
export async function listLinkedChats(q: Queryable): Promise<{ chatId: number; role: BotRole }[]> {
  const r = await q.query<{ chatId: string; role: BotRole }>(
    'select chat_id as "chatId", role from bot_users where unbound_at is null order by bound_at',
  );
  return r.rows.map((x) => ({ chatId: Number(x.chatId), role: x.role }));
}

export async function linkedUserCount(q: Queryable): Promise<number> {
  const r = await q.query<{ n: number }>('select count(*)::int as n from bot_users where unbound_at is null');
  return r.rows[0]!.n;
}
