// The people one bot-sim terminal plays (--users, /as NAME): who they are, who speaks now, and
// whose chat a line of the bot's is in once there are several.
import type { SimUser } from '../dev/bot-api-sim.ts';

/** A Telegram username: what --users and /as take. */
export const NAME = /^[A-Za-z0-9_]{1,32}$/;
export const personNamed = (name: string, id: number): SimUser & { username: string } => ({
  id,
  username: name,
  first_name: name,
});

/** The people this terminal plays, and who speaks now. */
export class Cast {
  readonly people: (SimUser & { username: string })[];
  speaker: SimUser & { username: string };

  constructor(users: (SimUser & { username: string })[]) {
    this.people = [...users];
    this.speaker = users[0]!;
  }

  byId(id: number) {
    return this.people.find((p) => p.id === id);
  }

  /** Speaks as the named person, adding a new one with the next free id when the name is new. */
  speakAs(name: string): { person: SimUser & { username: string }; isNew: boolean } {
    const known = this.people.find((p) => p.username.toLowerCase() === name.toLowerCase());
    const person = known ?? personNamed(name, Math.max(...this.people.map((p) => p.id)) + 1);
    if (!known) this.people.push(person);
    this.speaker = person;
    return { person, isNew: !known };
  }

  /** A line about what happened in a chat, labelled with whose chat once there are several. */
  label(chatId: number, text: string): string {
    const person = this.byId(chatId);
    if (!person) return `(chat ${chatId}) ${text}`;
    return this.people.length > 1 ? `[${person.username}] ${text}` : text;
  }
}

export const describePerson = (p: SimUser & { username: string }) =>
  `${p.username} (user ${p.id}, @${p.username})`;

/** What `/as` or `:as` does; answers the line to print. */
export function switchSpeaker(cast: Cast, name: string): string {
  if (name === '')
    return `(${cast.people.map((p) => `${p.username}${p === cast.speaker ? ' (speaking)' : ''}`).join(', ')}; /as NAME switches)`;
  if (!NAME.test(name)) return '(a name is letters, digits and _, up to 32)';
  const { person, isNew } = cast.speakAs(name);
  return `(${isNew ? 'a new person: ' : ''}${describePerson(person)} speaks now)`;
}
