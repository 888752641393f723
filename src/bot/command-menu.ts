// The command menu Telegram shows beside the text box (setMyCommands): someone not linked sees
// /start and /help (the default scope), and each linked person their role's commands, set for
// their own chat (BotCommandScopeChat) when they bind and removed when they are unbound, so the
// default shows again. At start the menus of everyone linked are set again, in the background:
// a person bound while the bot was off, or by another process whose call failed, gets theirs.
import type { Api } from 'grammy';
import { listLinkedChats } from '../core/bot/links.ts';
import type { ServerContext } from '../http/context.ts';
import { errorInfo } from './progress.ts';
import { commandMenu } from './replies.ts';

/** Sets the chat's menu for the role, or removes it (null: back to the default). Never throws. */
export async function setChatMenu(
  app: ServerContext,
  api: Api,
  chatId: number,
  role: 'owner' | 'staff' | null,
): Promise<void> {
  const scope = { type: 'chat' as const, chat_id: chatId };
  try {
    if (role === null) await api.deleteMyCommands({ scope });
    else await api.setMyCommands(commandMenu(role), { scope });
  } catch (err) {
    app.logger.warn({ err: errorInfo(err) }, 'bot: could not set a chat command menu');
  }
}

/** The default menu and every linked person's, at start. Never throws. */
export async function setAllMenus(app: ServerContext, api: Api): Promise<void> {
  try {
    await api.setMyCommands(commandMenu(null));
    for (const chat of await listLinkedChats(app.db)) await setChatMenu(app, api, chat.chatId, chat.role);
  } catch (err) {
    app.logger.warn({ err: errorInfo(err) }, 'bot: could not set the command menus');
  }
}
