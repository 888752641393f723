// The Bot API stand-in (src/dev/bot-api-sim.ts) driven by grammY's own client, as the bot drives
// it: Telegram's shapes and error bodies, long polling and its conflicts, messages and their
// edits, files both ways, webhooks to a real local listener, payments and injected failures.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Api, GrammyError, InputFile } from 'grammy';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { type BotApiSim, startBotApiSim } from '../../src/dev/bot-api-sim.ts';

const alice = { id: 1001, username: 'alice', first_name: 'Alice' };
let sim: BotApiSim;
let api: Api;

beforeEach(async () => {
  sim = await startBotApiSim();
  api = new Api(sim.token, { apiRoot: sim.url });
});
afterEach(() => sim.close());

/** The Telegram error a call fails with (grammY's GrammyError), or a failure of the test. */
async function refusal(call: Promise<unknown>): Promise<GrammyError> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(GrammyError);
  return err as GrammyError;
}

describe('wire', () => {
  test('getMe answers the bot named by the token and the username', async () => {
    expect(sim.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(sim.token).toMatch(/^123456789:AA[A-Za-z0-9_-]{33}$/);
    expect(await api.getMe()).toEqual({
      id: 123456789,
      is_bot: true,
      first_name: 'Redeem Gateway (sim)',
      username: 'redeem_sim_bot',
      can_join_groups: true,
      can_read_all_group_messages: false,
      supports_inline_queries: false,
    });
    const other = await startBotApiSim({
      token: '42:AAbcdefghijklmnopqrstuvwxyz0123456789',
      username: 'x_bot',
    });
    try {
      expect(await new Api(other.token, { apiRoot: other.url }).getMe()).toMatchObject({
        id: 42,
        username: 'x_bot',
      });
    } finally {
      await other.close();
    }
  });

  test('a wrong token is 401 Unauthorized, an unknown method 404, both Telegram-shaped', async () => {
    const wrong = new Api('123456789:AAwrongwrongwrongwrongwrongwrongwrong', { apiRoot: sim.url });
    const err = await refusal(wrong.getMe());
    expect([err.error_code, err.description]).toEqual([401, 'Unauthorized']);
    const res = await fetch(`${sim.url}/bot${sim.token}/noSuchMethod`, { method: 'POST' });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({
      ok: false,
      error_code: 404,
      description: 'Not Found: method not found',
    });
    // Nothing a wrong token sent is recorded or acted on.
    expect(sim.calls.map((c) => c.method)).toEqual(['noSuchMethod']);
  });

  test('urlencoded and query-string calls are read as Telegram reads them (JSON inside strings)', async () => {
    await sim.sendText(alice, 'hello');
    const res = await fetch(`${sim.url}/bot${sim.token}/sendMessage?chat_id=1001`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        text: 'pick one',
        reply_markup: JSON.stringify({ inline_keyboard: [[{ text: 'A', callback_data: 'a' }]] }),
      }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      ok: true,
      result: { message_id: 2, chat: { id: 1001, type: 'private' }, text: 'pick one' },
    });
    expect(sim.botMessages(1001)[0]?.reply_markup).toEqual({
      inline_keyboard: [[{ text: 'A', callback_data: 'a' }]],
    });
    const get = await fetch(`${sim.url}/bot${sim.token}/getMe`);
    expect(await get.json()).toMatchObject({ ok: true, result: { id: 123456789 } });
  });
});

describe('updates by long polling', () => {
  test('a waiting getUpdates answers as soon as a message is pushed, with command entities', async () => {
    const started = Date.now();
    const poll = api.getUpdates({ timeout: 20 });
    await sim.waitFor(() => sim.calls.some((c) => c.method === 'getUpdates'));
    const sent = await sim.sendText(alice, '/start tok123');
    const updates = await poll;
    expect(Date.now() - started).toBeLessThan(5000);
    expect(updates).toEqual([
      {
        update_id: sent.updateId,
        message: {
          message_id: sent.messageId,
          from: { id: 1001, is_bot: false, first_name: 'Alice', username: 'alice', language_code: 'en' },
          chat: { id: 1001, type: 'private', first_name: 'Alice', username: 'alice' },
          date: expect.any(Number),
          text: '/start tok123',
          entities: [{ type: 'bot_command', offset: 0, length: 6 }],
        },
      },
    ]);
  });

  test('an empty poll waits for its timeout and answers []', async () => {
    const started = Date.now();
    expect(await api.getUpdates({ timeout: 1 })).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  test('updates stay until an offset above them confirms them; limit caps a batch', async () => {
    const ids = [];
    for (const t of ['one', 'two', 'three']) ids.push((await sim.sendText(alice, t)).updateId);
    expect(ids[1]).toBe(ids[0]! + 1);
    expect((await api.getUpdates({ limit: 2 })).map((u) => u.update_id)).toEqual(ids.slice(0, 2));
    // Not confirmed: a poll without offset is handed the same updates again.
    expect((await api.getUpdates()).map((u) => u.update_id)).toEqual(ids);
    expect((await api.getUpdates({ offset: ids[1]! + 1 })).map((u) => u.update_id)).toEqual([ids[2]]);
    expect(await api.getUpdates({ offset: ids[2]! + 1 })).toEqual([]);
    expect(sim.updatesPending()).toBe(0);
    expect(sim.confirmedOffset).toBe(ids[2]! + 1);
  });

  test('a second poll ends the waiting one with 409, as two processes polling one bot get', async () => {
    const first = api.getUpdates({ timeout: 20 });
    await sim.waitFor(() => sim.calls.some((c) => c.method === 'getUpdates'));
    const second = api.getUpdates({ timeout: 20 });
    const err = await refusal(first);
    expect(err.error_code).toBe(409);
    expect(err.description).toBe(
      'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running',
    );
    const { updateId } = await sim.sendText(alice, 'after the conflict');
    expect((await second).map((u) => u.update_id)).toEqual([updateId]);
  });

  test('a poll its client abandons ends quietly: what comes next waits for the next poll', async () => {
    const { updateId } = await sim.sendText(alice, 'read and confirmed');
    await api.getUpdates();
    expect(await api.getUpdates({ offset: updateId + 1 })).toEqual([]);
    const abandoned = new AbortController();
    // grammY types its signal with the abort-controller package's AbortSignal, which Node's matches.
    const signal = abandoned.signal as unknown as Parameters<Api['getUpdates']>[1];
    const first = api.getUpdates({ offset: updateId + 1, timeout: 20 }, signal).catch((e: unknown) => e);
    await sim.waitFor(() => sim.calls.filter((c) => c.method === 'getUpdates').length === 3);
    abandoned.abort();
    await first;
    await new Promise((r) => setTimeout(r, 100));
    // A redelivered copy is handed out once: had the dead poll still been waiting, it would
    // have taken it and the next poll would get nothing.
    sim.redeliver(updateId);
    expect((await api.getUpdates({ offset: updateId + 1, timeout: 5 })).map((u) => u.update_id)).toEqual([
      updateId,
    ]);
  });

  test('redeliver queues the same update again, delivered once whatever the offset', async () => {
    const { updateId } = await sim.sendText(alice, '/redeem 5123456789 CODE-1');
    const [u] = await api.getUpdates();
    expect(await api.getUpdates({ offset: updateId + 1 })).toEqual([]);
    sim.redeliver(updateId);
    expect(await api.getUpdates({ offset: updateId + 1 })).toEqual([u]);
    expect(await api.getUpdates({ offset: updateId + 1 })).toEqual([]);
    expect(() => sim.redeliver(1)).toThrow(/no update 1/);
  });

  test('pushUpdate sends raw updates; a group message is recorded in its chat', async () => {
    const id = sim.pushUpdate({
      message: {
        chat: { id: -100777, type: 'supergroup' },
        from: { id: 1001, is_bot: false },
        text: '/stock',
      },
    });
    const edited = sim.pushUpdate({
      update_id: id + 10,
      edited_message: { message_id: 1, chat: { id: -100777 } },
    });
    expect(edited).toBe(id + 10);
    const updates = await api.getUpdates();
    expect(updates.map((u) => u.update_id)).toEqual([id, id + 10]);
    expect(updates[0]?.message).toMatchObject({
      message_id: 1,
      chat: { id: -100777 },
      date: expect.any(Number),
    });
    expect(sim.messages(-100777)).toMatchObject([{ message_id: 1, text: '/stock', from_bot: false }]);
    // The next update continues after the highest id given.
    expect((await sim.sendText(alice, 'x')).updateId).toBe(id + 11);
  });
});

describe('messages', () => {
  test('send, edit, press, answer and delete, all reflected in messages()', async () => {
    const { messageId } = await sim.sendText(alice, '/redeem 5123456789 CODE-1');
    const keyboard = {
      inline_keyboard: [
        [
          { text: 'Redeem', callback_data: 'r:1' },
          { text: 'Cancel', callback_data: 'c:1' },
        ],
      ],
    };
    const sent = await api.sendMessage(1001, 'player_id: 5123456789', {
      reply_markup: keyboard,
      parse_mode: 'HTML',
    });
    expect(sent.message_id).toBe(messageId + 1);
    const [question] = sim.botMessages(1001);
    expect(question).toMatchObject({
      text: 'player_id: 5123456789',
      from_bot: true,
      parse_mode: 'HTML',
      deleted: false,
    });

    const { updateId, callbackQueryId } = await sim.press(alice, question!, 'r:1');
    const press = (await api.getUpdates()).at(-1);
    expect(press).toMatchObject({
      update_id: updateId,
      callback_query: {
        id: callbackQueryId,
        data: 'r:1',
        from: { id: 1001 },
        message: { message_id: sent.message_id },
      },
    });
    await expect(sim.press(alice, question!, 'nope')).rejects.toThrow(/no button "nope".*"r:1", "c:1"/);
    expect(await api.answerCallbackQuery(callbackQueryId, { text: 'running' })).toBe(true);
    const twice = await refusal(api.answerCallbackQuery(callbackQueryId));
    expect(twice.description).toMatch(/query is too old/);

    // Editing the text without sending the keyboard again drops it, as Telegram does.
    await api.editMessageText(1001, sent.message_id, 'done: 0/1');
    await api.editMessageText(1001, sent.message_id, 'done: 1/1');
    expect(question).toMatchObject({ text: 'done: 1/1', edits: ['player_id: 5123456789', 'done: 0/1'] });
    expect(question!.reply_markup).toBeUndefined();
    const same = await refusal(api.editMessageText(1001, sent.message_id, 'done: 1/1'));
    expect([same.error_code, same.description]).toEqual([
      400,
      expect.stringMatching(/^Bad Request: message is not modified/),
    ]);
    await expect(sim.press(alice, question!, 'r:1')).rejects.toThrow(/no button/);
    await sim.press(alice, question!, 'r:1', { stale: true });
    await api.editMessageReplyMarkup(1001, sent.message_id, { reply_markup: keyboard });
    expect(question!.reply_markup).toEqual(keyboard);

    expect(await api.deleteMessage(1001, messageId)).toBe(true);
    const gone = await refusal(api.deleteMessage(1001, messageId));
    expect(gone.description).toBe('Bad Request: message to delete not found');
    expect(sim.messages(1001).map((m) => [m.message_id, m.from_bot, m.deleted])).toEqual([
      [messageId, false, true],
      [sent.message_id, true, false],
    ]);
  });

  test('Telegram refusals: unknown chat, empty text, bad button data, editing a person’s message', async () => {
    expect((await refusal(api.sendMessage(999, 'hi'))).description).toBe('Bad Request: chat not found');
    const { messageId } = await sim.sendText(alice, 'hi');
    expect((await refusal(api.sendMessage(1001, ' '))).description).toBe(
      'Bad Request: message text is empty',
    );
    const long = { inline_keyboard: [[{ text: 'x', callback_data: 'x'.repeat(65) }]] };
    expect((await refusal(api.sendMessage(1001, 'a', { reply_markup: long }))).description).toBe(
      'Bad Request: BUTTON_DATA_INVALID',
    );
    expect((await refusal(api.editMessageText(1001, messageId, 'mine now'))).description).toBe(
      "Bad Request: message can't be edited",
    );
    expect((await refusal(api.editMessageText(1001, 77, 'x'))).description).toBe(
      'Bad Request: message to edit not found',
    );
    expect(await api.sendChatAction(1001, 'typing')).toBe(true);
    expect(await api.setMyCommands([{ command: 'help', description: 'the commands' }])).toBe(true);
    expect(sim.commands()).toEqual([{ command: 'help', description: 'the commands' }]);
    expect((await refusal(api.setMyCommands([{ command: 'Bad!', description: 'x' }]))).description).toBe(
      'Bad Request: BOT_COMMAND_INVALID',
    );
  });
});

describe('bursts', () => {
  test('a burst reaches a waiting poll as one batch, each message dated, newlines kept', async () => {
    const poll = api.getUpdates({ timeout: 20 });
    await sim.waitFor(() => sim.calls.some((c) => c.method === 'getUpdates'));
    const texts = Array.from({ length: 30 }, (_, i) => `/check CODE-${i}\nCODE-${i}b`);
    texts[0] = '/addstock 660\nAAA-1\nAAA-2';
    const before = Math.floor(Date.now() / 1000);
    const sent = await sim.burst(alice, texts);
    const batch = await poll;
    expect(batch.map((u) => u.update_id)).toEqual(sent.updateIds);
    expect(sent.updateIds).toHaveLength(30);
    expect(batch.map((u) => u.message?.text)).toEqual(texts);
    expect(batch.map((u) => u.message?.message_id)).toEqual(sent.messageIds);
    expect(batch[0]?.message?.entities).toEqual([{ type: 'bot_command', offset: 0, length: 9 }]);
    for (const u of batch) {
      expect(u.message!.date).toBeGreaterThanOrEqual(before);
      expect(u.message!.date).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
    }
  });

  test('a burst with nobody polling is all in the next batch; a date can be given; limits as the apps', async () => {
    const other = { id: 1002, username: 'bob', first_name: 'Bob' };
    await sim.sendText(other, 'before');
    const sent = await sim.burst(alice, ['one', 'two\nlines', 'three'], { date: 1_700_000_000 });
    const batch = await api.getUpdates();
    expect(batch.map((u) => [u.message?.from?.id, u.message?.text, u.message?.date])).toEqual([
      [1002, 'before', expect.any(Number)],
      [1001, 'one', 1_700_000_000],
      [1001, 'two\nlines', 1_700_000_000],
      [1001, 'three', 1_700_000_000],
    ]);
    expect(batch.slice(1).map((u) => u.update_id)).toEqual(sent.updateIds);
    // Nothing is queued when one text is one the apps would never send.
    await expect(sim.burst(alice, ['fine', 'x'.repeat(4097)])).rejects.toThrow(/4097 characters/);
    await expect(sim.burst(alice, ['fine', ' \n '])).rejects.toThrow(/no empty messages/);
    expect(sim.updatesPending()).toBe(4);
    expect((await sim.sendText(alice, 'x'.repeat(4096))).messageId).toBeGreaterThan(0);
  });
});

describe('command menus by scope', () => {
  const staff = [{ command: 'help', description: 'the commands' }];
  const owner = [...staff, { command: 'topup', description: 'add money' }];

  test('setMyCommands stores a list per scope and language; getMyCommands answers that exact one', async () => {
    const bob = { id: 1002, username: 'bob', first_name: 'Bob' };
    await sim.sendText(alice, 'hi');
    await sim.sendText(bob, 'hi');
    await api.setMyCommands(staff);
    await api.setMyCommands([{ command: 'start', description: 'link' }], {
      scope: { type: 'all_private_chats' },
    });
    await api.setMyCommands(owner, { scope: { type: 'chat', chat_id: 1001 } });
    await api.setMyCommands([{ command: 'hilfe', description: 'Befehle' }], {
      scope: { type: 'chat', chat_id: 1001 },
      language_code: 'de',
    });
    expect(sim.commands()).toEqual(staff);
    expect(sim.commands({ type: 'chat', chat_id: 1001 })).toEqual(owner);
    expect(sim.commands({ type: 'chat', chat_id: 1001 }, 'de')).toEqual([
      { command: 'hilfe', description: 'Befehle' },
    ]);
    expect(sim.commands({ type: 'chat', chat_id: 1002 })).toEqual([]);
    expect(await api.getMyCommands({ scope: { type: 'chat', chat_id: 1001 } })).toEqual(owner);
    expect(await api.getMyCommands({ scope: { type: 'chat', chat_id: 1002 } })).toEqual([]);
    expect(await api.getMyCommands()).toEqual(staff);
    expect(sim.commandLists().map((l) => [l.scope, l.languageCode])).toEqual([
      [{ type: 'default' }, ''],
      [{ type: 'all_private_chats' }, ''],
      [{ type: 'chat', chat_id: 1001 }, ''],
      [{ type: 'chat', chat_id: 1001 }, 'de'],
    ]);

    // What each person sees: their chat's list, else all private chats', else the default.
    expect(sim.commandMenu(1001)).toEqual(owner);
    expect(sim.commandMenu(1001, 'de')).toEqual([{ command: 'hilfe', description: 'Befehle' }]);
    expect(sim.commandMenu(1002)).toEqual([{ command: 'start', description: 'link' }]);
    expect(await api.deleteMyCommands({ scope: { type: 'chat', chat_id: 1001 } })).toBe(true);
    expect(sim.commandMenu(1001)).toEqual([{ command: 'start', description: 'link' }]);
    expect(sim.commandMenu(1001, 'de')).toEqual([{ command: 'hilfe', description: 'Befehle' }]);
    // An empty list deletes too, as on Telegram.
    await api.setMyCommands([], { scope: { type: 'all_private_chats' } });
    expect(sim.commandMenu(1002)).toEqual(staff);
    await api.deleteMyCommands();
    expect(sim.commandMenu(1002)).toEqual([]);
  });

  test('a bad scope or language is refused as Telegram does, and nothing is stored', async () => {
    await sim.sendText(alice, 'hi');
    const chatUnknown = await refusal(api.setMyCommands(staff, { scope: { type: 'chat', chat_id: 4444 } }));
    expect([chatUnknown.error_code, chatUnknown.description]).toEqual([400, 'Bad Request: chat not found']);
    const badType = await refusal(
      api.setMyCommands(staff, { scope: { type: 'everyone' } as unknown as { type: 'default' } }),
    );
    expect(badType.description).toBe('Bad Request: wrong BotCommandScope type specified');
    const badLanguage = await refusal(api.setMyCommands(staff, { language_code: 'english' as 'en' }));
    expect(badLanguage.description).toBe('Bad Request: invalid language code specified');
    expect(
      (await refusal(api.getMyCommands({ scope: { type: 'chat_member', chat_id: 1001, user_id: 0 } })))
        .description,
    ).toBe('Bad Request: user not found');
    expect(sim.commandLists()).toEqual([]);
    await api.setMyCommands(staff, { scope: { type: 'chat_member', chat_id: 1001, user_id: 1001 } });
    expect(sim.commands({ type: 'chat_member', chat_id: 1001, user_id: 1001 })).toEqual(staff);
  });
});

describe('pacing and timestamps', () => {
  test('off by default: sends are never refused; each message records when it was stored', async () => {
    const { messageId } = await sim.sendText(alice, 'hi');
    const started = Date.now();
    for (let i = 0; i < 5; i++) await api.sendMessage(1001, `reply ${i}`);
    const [asked, ...replies] = sim.messages(1001);
    expect(asked!.at).toBeLessThanOrEqual(started);
    expect(replies.map((m) => m.at >= started)).toEqual([true, true, true, true, true]);
    expect(sim.replyDelay(1001, messageId)).toBe(replies[0]!.at - asked!.at);
    expect(() => sim.replyDelay(1001, replies[0]!.message_id)).toThrow(/no message .* of a person/);
  });

  test('with flood limits on, a second send to a chat within a second is 429 with retry_after', async () => {
    sim.setFloodLimits(true);
    const bob = { id: 1002, username: 'bob', first_name: 'Bob' };
    await sim.sendText(alice, 'hi');
    const { messageId: bobAsked } = await sim.sendText(bob, 'me too');
    expect(sim.replyDelay(1002, bobAsked)).toBeUndefined();
    await api.sendMessage(1001, 'first');
    const err = await refusal(api.sendMessage(1001, 'second'));
    expect([err.error_code, err.description, err.parameters]).toEqual([
      429,
      'Too Many Requests: retry after 1',
      { retry_after: 1 },
    ]);
    await refusal(api.sendDocument(1001, new InputFile(Buffer.from('x'), 'a.txt')));
    // Another chat is not held up by the first one's pace.
    await api.sendMessage(1002, 'yours');
    expect(sim.replyDelay(1002, bobAsked)).toBeGreaterThanOrEqual(0);
    await new Promise((r) => setTimeout(r, 1050));
    expect((await api.sendMessage(1001, 'second')).text).toBe('second');
    const sends = sim.botMessages(1001);
    expect(sends.map((m) => m.text)).toEqual(['first', 'second']);
    expect(sends[1]!.at - sends[0]!.at).toBeGreaterThanOrEqual(1000);
    expect(sim.calls.filter((c) => c.error_code === 429).map((c) => c.method)).toEqual([
      'sendMessage',
      'sendDocument',
    ]);

    // The overall limit counts every chat together; new limits count from when they are set.
    sim.setFloodLimits({
      perChat: { messages: 10, windowMs: 1000 },
      overall: { messages: 2, windowMs: 60_000 },
    });
    await api.sendMessage(1002, 'a');
    await api.sendMessage(1001, 'b');
    const overall = await refusal(api.sendMessage(1002, 'c'));
    expect(overall.parameters.retry_after).toBeGreaterThan(50);
    sim.setFloodLimits(undefined);
    await api.sendMessage(1002, 'c');
  });

  test('deletions are recorded in order, with the time, for the bot’s messages and the person’s', async () => {
    const { messageId } = await sim.sendText(alice, '/addstock 660\nAAA-1');
    const reply = await api.sendMessage(1001, 'added: 1');
    const before = Date.now();
    await api.deleteMessage(1001, messageId);
    await api.deleteMessages(1001, [reply.message_id]);
    expect(sim.deletions(1001)).toEqual([
      { chat_id: 1001, message_id: messageId, from_bot: false, at: expect.any(Number) },
      { chat_id: 1001, message_id: reply.message_id, from_bot: true, at: expect.any(Number) },
    ]);
    expect(sim.deletions()[0]!.at).toBeGreaterThanOrEqual(before);
    expect(sim.messages(1001).map((m) => m.deleted_at !== undefined)).toEqual([true, true]);
    expect(sim.deletions(1002)).toEqual([]);
  });
});

describe('files', () => {
  test('a document sent by a person: getFile, then the download gives the same bytes', async () => {
    const bytes = Buffer.concat([Buffer.from('CODE-A\nCODE-B,x\n'), Buffer.from([0xff, 0x00, 0xfe])]);
    await sim.sendDocument(alice, { fileName: 'codes.txt', content: bytes, caption: '/addstock 660' });
    const [u] = await api.getUpdates();
    const msg = u!.message!;
    expect(msg.caption).toBe('/addstock 660');
    expect(msg.caption_entities).toEqual([{ type: 'bot_command', offset: 0, length: 9 }]);
    expect(msg.document).toMatchObject({
      file_name: 'codes.txt',
      mime_type: 'text/plain',
      file_size: bytes.length,
    });
    const file = await api.getFile(msg.document!.file_id);
    expect(file).toEqual({
      file_id: msg.document!.file_id,
      file_unique_id: msg.document!.file_unique_id,
      file_size: bytes.length,
      file_path: expect.stringMatching(/^documents\/file_\d+\.txt$/),
    });
    const download = await fetch(`${sim.url}/file/bot${sim.token}/${file.file_path}`);
    expect(download.status).toBe(200);
    expect(Buffer.from(await download.arrayBuffer())).toEqual(bytes);
    expect((await fetch(`${sim.url}/file/botWRONG/${file.file_path}`)).status).toBe(401);
    expect((await fetch(`${sim.url}/file/bot${sim.token}/documents/nothing.txt`)).status).toBe(404);
    expect((await refusal(api.getFile('no-such-file'))).description).toBe('Bad Request: invalid file_id');
  });

  test('a document the bot uploads (multipart) is stored and served', async () => {
    await sim.sendText(alice, 'report please');
    const content = Buffer.from('line 1\nline 2\n');
    const sent = await api.sendDocument(1001, new InputFile(content, 'report.csv'), {
      caption: 'your report',
    });
    expect(sent.document).toMatchObject({ file_name: 'report.csv', file_size: content.length });
    const call = sim.calls.find((c) => c.method === 'sendDocument');
    expect(call?.params).toMatchObject({ chat_id: '1001', caption: 'your report' });
    const file = await api.getFile(sent.document.file_id);
    const download = await fetch(`${sim.url}/file/bot${sim.token}/${file.file_path}`);
    expect(Buffer.from(await download.arrayBuffer())).toEqual(content);
    expect(sim.botMessages(1001)[0]).toMatchObject({ caption: 'your report', from_bot: true });
  });
});

describe('webhook', () => {
  let hook: Server;
  let hookUrl: string;
  const received: { headers: IncomingHttpHeaders; body: Record<string, unknown> }[] = [];
  let failFirst = 0;

  beforeEach(async () => {
    received.length = 0;
    hook = createServer((req, res) => {
      let text = '';
      req.on('data', (d) => {
        text += String(d);
      });
      req.on('end', () => {
        received.push({ headers: req.headers, body: JSON.parse(text) });
        res.writeHead(failFirst-- > 0 ? 500 : 200).end('{}');
      });
    });
    await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
    hookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/bot/updates`;
  });
  afterEach(() => new Promise<void>((r) => hook.close(() => r())));

  test('updates are POSTed with the secret header, retried after a 500; getUpdates is 409 meanwhile', async () => {
    failFirst = 1;
    const queued = await sim.sendText(alice, 'queued before the webhook');
    expect(await api.setWebhook(hookUrl, { secret_token: 'hook_Secret-1' })).toBe(true);
    const live = await sim.sendText(alice, '/help');
    await sim.waitFor(() => received.length >= 3);
    // The first attempt at the queued update was answered 500, so it came twice.
    expect(received.map((r) => r.body.update_id)).toEqual([queued.updateId, queued.updateId, live.updateId]);
    expect(received[2]?.headers['x-telegram-bot-api-secret-token']).toBe('hook_Secret-1');
    expect(received[2]?.headers['content-type']).toBe('application/json');
    expect(received[2]?.body).toMatchObject({ message: { text: '/help', chat: { id: 1001 } } });
    expect(await api.getWebhookInfo()).toMatchObject({
      url: hookUrl,
      pending_update_count: 0,
      last_error_message: 'Wrong response from the webhook: 500 Internal Server Error',
    });
    const err = await refusal(api.getUpdates());
    expect([err.error_code, err.description]).toEqual([
      409,
      "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
    ]);
    expect(await api.deleteWebhook()).toBe(true);
    const after = await sim.sendText(alice, 'polling again');
    expect((await api.getUpdates()).map((u) => u.update_id)).toEqual([after.updateId]);
    expect(received).toHaveLength(3);
    expect(await api.getWebhookInfo()).toMatchObject({ url: '', pending_update_count: 1 });
  });

  test('redeliver posts the same update to the webhook again', async () => {
    await api.setWebhook(hookUrl, { secret_token: 's' });
    const { updateId } = await sim.sendText(alice, 'once');
    await sim.waitFor(() => received.length === 1);
    sim.redeliver(updateId);
    await sim.waitFor(() => received.length === 2);
    expect(received[1]?.body).toEqual(received[0]?.body);
  });

  test('one chat’s slow answer holds up only that chat; max_connections 1 holds up all', async () => {
    const arrived: string[] = [];
    const held: (() => void)[] = [];
    const slow = createServer((req, res) => {
      let text = '';
      req.on('data', (d) => {
        text += String(d);
      });
      req.on('end', () => {
        const said = (JSON.parse(text) as { message: { text: string } }).message.text;
        arrived.push(said);
        if (said.startsWith('slow')) held.push(() => res.writeHead(200).end('{}'));
        else res.writeHead(200).end('{}');
      });
    });
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(slow.address() as AddressInfo).port}/bot/updates`;
    try {
      const bob = { id: 1002, username: 'bob', first_name: 'Bob' };
      await api.setWebhook(url);
      await sim.burst(alice, ['slow 1', 'alice 2']);
      await sim.sendText(bob, 'bob 1');
      await sim.waitFor(() => arrived.includes('bob 1'));
      // Alice's second waits for her first to be answered; Bob's went meanwhile.
      await new Promise((r) => setTimeout(r, 200));
      expect(arrived).toEqual(['slow 1', 'bob 1']);
      held.shift()!();
      await sim.waitFor(() => arrived.includes('alice 2'));
      expect(arrived).toEqual(['slow 1', 'bob 1', 'alice 2']);

      await api.setWebhook(url, { max_connections: 1 });
      expect(await api.getWebhookInfo()).toMatchObject({ max_connections: 1 });
      await sim.sendText(alice, 'slow 3');
      await sim.sendText(bob, 'bob 2');
      await sim.waitFor(() => arrived.includes('slow 3'));
      await new Promise((r) => setTimeout(r, 200));
      expect(arrived.includes('bob 2')).toBe(false);
      held.shift()!();
      await sim.waitFor(() => arrived.includes('bob 2'));
      expect((await refusal(api.setWebhook(url, { max_connections: 101 }))).error_code).toBe(400);
    } finally {
      for (const release of held) release();
      await api.deleteWebhook();
      slow.closeAllConnections();
      await new Promise<void>((r) => slow.close(() => r()));
    }
  });

  test('a burst reaches the webhook back to back, in order', async () => {
    await api.setWebhook(hookUrl, { secret_token: 's' });
    const sent = await sim.burst(alice, ['a', 'b\nc', 'd', 'e']);
    await sim.waitFor(() => received.length === 4);
    expect(received.map((r) => r.body.update_id)).toEqual(sent.updateIds);
    expect(received.map((r) => (r.body.message as { text: string }).text)).toEqual(['a', 'b\nc', 'd', 'e']);
  });
});

describe('payments', () => {
  const invoice = () =>
    api.sendInvoice(
      1001,
      'Wallet top-up',
      'Top-up of 12.50 USD',
      'tpr_abc',
      'USD',
      [{ label: 'Top-up', amount: 1250 }],
      {
        provider_token: 'sim-provider-token',
      },
    );

  /** A minimal bot: accepts a pre-checkout only for 1250 USD, and collects the payments it sees. */
  async function answerPreCheckouts(stop: AbortSignal, paid: unknown[]) {
    let offset = 0;
    while (!stop.aborted) {
      const updates = await api.getUpdates({ offset, timeout: 1 }).catch(() => []);
      for (const u of updates) {
        offset = u.update_id + 1;
        const q = u.pre_checkout_query;
        if (q) {
          const ok = q.total_amount === 1250 && q.currency === 'USD' && q.invoice_payload === 'tpr_abc';
          await api.answerPreCheckoutQuery(q.id, ok, ok ? {} : { error_message: 'The amount changed.' });
        }
        if (u.message?.successful_payment) paid.push(u.message.successful_payment);
      }
    }
  }

  test('an invoice paid: pre-checkout accepted, then successful_payment; a wrong amount is refused', async () => {
    await sim.sendText(alice, '/topup 12.50');
    const sent = await invoice();
    expect(sent.invoice).toEqual({
      title: 'Wallet top-up',
      description: 'Top-up of 12.50 USD',
      start_parameter: '',
      currency: 'USD',
      total_amount: 1250,
    });
    const [inv] = sim.botMessages(1001);
    expect(inv?.invoice).toEqual({
      title: 'Wallet top-up',
      payload: 'tpr_abc',
      currency: 'USD',
      total_amount: 1250,
      provider_token: 'sim-provider-token',
    });
    const stop = new AbortController();
    const paid: unknown[] = [];
    const bot = answerPreCheckouts(stop.signal, paid);
    try {
      const result = await sim.pay(alice, inv!, { chargeId: 'charge-1' });
      expect(result).toEqual({ accepted: true, chargeId: 'charge-1' });
      await sim.waitFor(() => paid.length === 1);
      expect(paid[0]).toEqual({
        currency: 'USD',
        total_amount: 1250,
        invoice_payload: 'tpr_abc',
        telegram_payment_charge_id: 'charge-1',
        provider_payment_charge_id: expect.stringMatching(/^sim_provider_/),
      });
      expect(await sim.pay(alice, inv!, { totalAmount: 999 })).toEqual({
        accepted: false,
        errorMessage: 'The amount changed.',
      });
    } finally {
      stop.abort();
      await bot;
    }
    expect(paid).toHaveLength(1);
    const refusedAnswer = sim.calls
      .filter((c) => c.method === 'answerPreCheckoutQuery')
      .map((c) => c.params.ok);
    expect(refusedAnswer).toEqual([true, false]);
  });

  test('a pre-checkout nobody answers times out unpaid; a currency needs a provider token', async () => {
    const quick = await startBotApiSim({ preCheckoutTimeoutMs: 300 });
    try {
      const qapi = new Api(quick.token, { apiRoot: quick.url });
      await quick.sendText(alice, 'pay');
      await qapi.sendInvoice(1001, 'T', 'D', 'p', 'USD', [{ label: 'x', amount: 100 }], {
        provider_token: 'p',
      });
      const result = await quick.pay(alice, quick.botMessages(1001)[0]!);
      expect(result).toEqual({ accepted: false, errorMessage: 'no answerPreCheckoutQuery within 300 ms' });
      expect(quick.messages(1001).some((m) => m.from_bot === false && m.text === undefined)).toBe(false);
      const err = await refusal(qapi.sendInvoice(1001, 'T', 'D', 'p', 'USD', [{ label: 'x', amount: 100 }]));
      expect(err.description).toBe('Bad Request: PAYMENT_PROVIDER_INVALID');
    } finally {
      await quick.close();
    }
  });
});

describe('injected failures', () => {
  test('failNext answers 429 with retry_after, then the method works again', async () => {
    await sim.sendText(alice, 'hi');
    sim.failNext('sendMessage', { error_code: 429, retry_after: 3 });
    const err = await refusal(api.sendMessage(1001, 'too fast'));
    expect([err.error_code, err.description, err.parameters]).toEqual([
      429,
      'Too Many Requests: retry after 3',
      { retry_after: 3 },
    ]);
    expect((await api.sendMessage(1001, 'now')).text).toBe('now');
    // Failures injected one after the other are answered in that order.
    sim.failNext('sendMessage', { error_code: 403 });
    sim.failNext('SENDMESSAGE', { error_code: 502, description: 'Bad Gateway: upstream' });
    expect((await refusal(api.sendMessage(1001, 'x'))).description).toBe(
      'Forbidden: bot was blocked by the user',
    );
    expect((await refusal(api.sendMessage(1001, 'x'))).description).toBe('Bad Gateway: upstream');
    expect(sim.botMessages(1001).map((m) => m.text)).toEqual(['now']);
    expect(sim.calls.filter((c) => c.method === 'sendMessage').map((c) => c.error_code)).toEqual([
      429,
      undefined,
      403,
      502,
    ]);
  });

  test('failNext counts its times, and a raw error body carries no parameters when none apply', async () => {
    await sim.sendText(alice, 'hi');
    sim.failNext('editMessageText', { error_code: 500 }, 2);
    const sent = await api.sendMessage(1001, 'a');
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`${sim.url}/bot${sim.token}/editMessageText`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ chat_id: 1001, message_id: sent.message_id, text: 'b' }),
      });
      expect([res.status, await res.json()]).toEqual([
        500,
        { ok: false, error_code: 500, description: 'Internal Server Error' },
      ]);
    }
    await api.editMessageText(1001, sent.message_id, 'b');
    expect(sim.botMessages(1001)[0]).toMatchObject({ text: 'b', edits: ['a'] });
  });

  test('waitFor rejects with what the chat holds', async () => {
    await sim.sendText(alice, 'where is my answer');
    await expect(sim.waitFor(() => sim.botMessages(1001).length > 0, 100)).rejects.toThrow(
      /nothing within 100 ms[\s\S]*user: "where is my answer"/,
    );
  });
});
