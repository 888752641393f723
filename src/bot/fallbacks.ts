// What no feature handled, answered once (registered last in bot/index.ts): a button no feature
// knows (an old keyboard, a forged payload) is answered and does nothing; any other message (an
// unknown command, plain text) gets the help line. Being last is what makes them fallbacks: a
// feature registered before them sees its own buttons and commands first, and no feature
// registers a catch-all of its own.
import { Composer } from 'grammy';
import { actOnce, type BotContext } from './context.ts';
import { HELP_LINE } from './replies.ts';

export const fallbacks = new Composer<BotContext>();
fallbacks.on('callback_query:data', async (c) => {
  if ((await actOnce(c, 'callback', async () => true)) !== null)
    await c.answerCallbackQuery({ text: 'This button does nothing any more.' });
});
fallbacks.on('message', async (c) => {
  if ((await actOnce(c, 'other', async () => true)) !== null) await c.reply(HELP_LINE);
});
