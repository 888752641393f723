// The chat bot's operator side (docs/reference/bot.md#running-the-bot, docs/reference/bot.md#links-and-roles): its state, the links that let a person in,
// the people bound to a customer, and unbinding one. A link needs the bot (its URL names the
// bot's username): with no bot configured it is 409 conflict.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { createBotLink, linkedUserCount, listBotUsers, unbindBotUser } from '../../core/bot/links.ts';
import { pollingInstance } from '../../core/bot/poll-lease.ts';
import { lastUpdateAt } from '../../core/bot/updates.ts';
import { isoUtc } from '../../core/clock.ts';
import { ApiError } from '../../core/errors.ts';
import { INSTANCE_ID } from '../../core/instance.ts';
import { actorOf } from '../../http/admin-door.ts';
import type { ServerContext } from '../../http/context.ts';
import { existingCustomerParam, parseBody } from './validation.ts';

const linkBody = z.strictObject({ role: z.enum(['owner', 'staff']) });

export function registerAdminBotRoutes(app: FastifyInstance, ctx: ServerContext) {
  app.get('/admin/v1/bot', async (request) => {
    const last = ctx.bot ? await lastUpdateAt(ctx.db) : null;
    return {
      ok: true,
      request_id: request.id,
      enabled: Boolean(ctx.bot),
      username: ctx.bot?.username ?? null,
      updates: ctx.config.BOT_UPDATES,
      last_update_at: last ? isoUtc(new Date(last)) : null,
      linked_users: await linkedUserCount(ctx.db),
      polling_instance:
        ctx.config.BOT_UPDATES === 'polling' && ctx.bot
          ? await pollingInstance(ctx.db, ctx.clock.now())
          : null,
      this_instance: INSTANCE_ID,
    };
  });

  app.post<{ Params: { id: string } }>('/admin/v1/customers/:id/bot-links', async (request, reply) => {
    const customerId = await existingCustomerParam(ctx.db, request.params.id);
    const body = parseBody(linkBody, request.body);
    if (!ctx.bot) throw new ApiError('conflict', 'no chat bot is configured (set BOT_TOKEN)');
    const link = await createBotLink(ctx, actorOf(request), {
      customerId,
      role: body.role,
      botUsername: ctx.bot.username,
    });
    reply.code(201);
    return { ok: true, request_id: request.id, ...link };
  });

  app.get<{ Params: { id: string } }>('/admin/v1/customers/:id/bot-users', async (request) => {
    const customerId = await existingCustomerParam(ctx.db, request.params.id);
    return { ok: true, request_id: request.id, users: await listBotUsers(ctx.db, customerId) };
  });

  app.post<{ Params: { id: string } }>('/admin/v1/bot-users/:id/unbind', async (request) => {
    if (!/^bu_[A-Za-z0-9]{1,40}$/.test(request.params.id))
      throw new ApiError('not_found', 'unknown bot user');
    const { chatId, ...done } = await unbindBotUser(ctx, actorOf(request), request.params.id);
    await ctx.bot?.menuChanged(chatId, null);
    return { ok: true, request_id: request.id, ...done };
  });
}
