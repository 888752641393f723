// The Bot API's command-menu methods (setMyCommands, getMyCommands, deleteMyCommands), each
// checking its scope and language as Telegram does.
import { ApiError } from './api-error.ts';
import type { CommandScope } from './command-menus.ts';
import type { Params } from './params.ts';
import type { Json } from './telegram-objects.ts';
import type { World } from './world.ts';

const CHAT_SCOPES = new Set(['chat', 'chat_administrators', 'chat_member']);
const PLAIN_SCOPES = new Set(['default', 'all_private_chats', 'all_group_chats', 'all_chat_administrators']);

/** The `scope` and `language_code` of the three command methods, checked as Telegram does. */
function commandScope(w: World, p: Params): { scope: CommandScope; language: string } {
  const raw = p.json('scope') ?? { type: 'default' };
  const language = p.str('language_code') ?? '';
  if (language !== '' && !/^[a-z]{2}$/.test(language))
    throw new ApiError(400, 'Bad Request: invalid language code specified');
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new ApiError(400, "Bad Request: can't parse BotCommandScope JSON object");
  const { type, chat_id, user_id } = raw as Json;
  if (typeof type !== 'string' || !(PLAIN_SCOPES.has(type) || CHAT_SCOPES.has(type)))
    throw new ApiError(400, 'Bad Request: wrong BotCommandScope type specified');
  if (PLAIN_SCOPES.has(type)) return { scope: { type } as CommandScope, language };
  // A chat scope names a chat the bot knows (a number here: the stand-in has no @usernames).
  const chat =
    typeof chat_id === 'number' || (typeof chat_id === 'string' && /^-?\d{1,16}$/.test(chat_id))
      ? Number(chat_id)
      : Number.NaN;
  if (!Number.isSafeInteger(chat)) throw new ApiError(400, 'Bad Request: chat not found');
  w.chat(chat);
  if (type !== 'chat_member') return { scope: { type, chat_id: chat } as CommandScope, language };
  const user = Number(user_id);
  if (typeof user_id === 'boolean' || !Number.isSafeInteger(user) || user <= 0)
    throw new ApiError(400, 'Bad Request: user not found');
  return { scope: { type, chat_id: chat, user_id: user }, language };
}

export function setMyCommands(w: World, p: Params): true {
  const list = p.json('commands');
  if (!Array.isArray(list) || list.length > 100)
    throw new ApiError(400, 'Bad Request: commands must be an array of at most 100 BotCommand');
  for (const c of list as Json[]) {
    if (typeof c?.command !== 'string' || !/^[a-z0-9_]{1,32}$/.test(c.command))
      throw new ApiError(400, 'Bad Request: BOT_COMMAND_INVALID');
    if (typeof c.description !== 'string' || c.description.length < 1 || c.description.length > 256)
      throw new ApiError(400, 'Bad Request: BOT_COMMAND_DESCRIPTION_INVALID');
  }
  const { scope, language } = commandScope(w, p);
  // An empty list is Telegram's other way of deleting the scope's commands.
  if (list.length === 0) w.commands.delete(scope, language);
  else {
    const checked = list as { command: string; description: string }[];
    const commands = checked.map((c) => ({ command: c.command, description: c.description }));
    w.commands.set({ scope, languageCode: language, commands });
  }
  return true;
}

export function getMyCommands(w: World, p: Params): Json[] {
  const { scope, language } = commandScope(w, p);
  return w.commands.get(scope, language)?.commands ?? [];
}

export function deleteMyCommands(w: World, p: Params): true {
  const { scope, language } = commandScope(w, p);
  w.commands.delete(scope, language);
  return true;
}
