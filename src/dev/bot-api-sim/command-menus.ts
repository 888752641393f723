// The bot's command menus as setMyCommands sets them: one list per scope and language, and the
// menu a person sees, resolved from the narrowest scope that has a list to the widest.

/** A BotCommandScope as setMyCommands takes it (Telegram's `type` names). */
export type CommandScope =
  | { type: 'default' }
  | { type: 'all_private_chats' }
  | { type: 'all_group_chats' }
  | { type: 'all_chat_administrators' }
  | { type: 'chat'; chat_id: number }
  | { type: 'chat_administrators'; chat_id: number }
  | { type: 'chat_member'; chat_id: number; user_id: number };

/** One command list the bot set: its scope, its language ('' for every language) and commands. */
export interface CommandList {
  scope: CommandScope;
  languageCode: string;
  commands: { command: string; description: string }[];
}

/** The key a command list is stored under: the scope, its chat and user, and the language. */
export function scopeKey(scope: CommandScope, languageCode = ''): string {
  const where =
    scope.type === 'chat' || scope.type === 'chat_administrators'
      ? `${scope.type}:${scope.chat_id}`
      : scope.type === 'chat_member'
        ? `chat_member:${scope.chat_id}:${scope.user_id}`
        : scope.type;
  return `${where}|${languageCode}`;
}

/**
 * The bot's command lists, one per scope and language; deleting one makes Telegram show the next
 * wider one.
 */
export class CommandMenus {
  private readonly lists = new Map<string, CommandList>();

  set(list: CommandList): void {
    this.lists.set(scopeKey(list.scope, list.languageCode), list);
  }

  /** The list set for exactly this scope and language, if any. */
  get(scope: CommandScope, languageCode = ''): CommandList | undefined {
    return this.lists.get(scopeKey(scope, languageCode));
  }

  delete(scope: CommandScope, languageCode = ''): void {
    this.lists.delete(scopeKey(scope, languageCode));
  }

  /** Every list set, in the order first set. */
  all(): CommandList[] {
    return [...this.lists.values()];
  }

  /**
   * The menu a person sees in a private chat (chat id = user id), resolved as Telegram does: the
   * chat's own list, then all private chats', then the default; at each step the list for their
   * language before the one for every language.
   */
  menu(chatId: number, languageCode = ''): { command: string; description: string }[] {
    const scopes: CommandScope[] = [
      { type: 'chat', chat_id: chatId },
      { type: 'all_private_chats' },
      { type: 'default' },
    ];
    for (const scope of scopes)
      for (const language of languageCode ? [languageCode, ''] : ['']) {
        const list = this.get(scope, language);
        if (list) return list.commands;
      }
    return [];
  }
}
