// A customer's chat bot (docs/reference/bot.md#links-and-roles) on the customer page: the Telegram users bound to it, each
// with an Unbind button (confirmed), and "Link a person": a single-use link for a role, made after
// a confirmation and shown only this once (the service keeps only its digest). With the bot off
// (no BOT_TOKEN) no link can be made: the control is disabled with a note saying why.
import { api } from './api.js';
import { h, put, statusLine, table, when } from './dom.js';

const personName = (u) => (u.username ? `@${u.username}` : `Telegram user ${u.telegram_user_id}`);

/** The bot section of customer `id`; `section.ready` settles once its first load is done. */
export function botSection(id) {
  const status = statusLine();
  const users = h('div');
  // The link of the last "Link a person", shown here once; a reload of the page forgets it.
  const secret = h('div.secret', { hidden: true, 'data-secret': 'bot-link' });
  const offNote = h('p.muted', { hidden: true, 'data-note': 'bot-off' });
  const role = h(
    'select',
    { name: 'role', 'aria-label': 'role of the person to link' },
    h('option', { value: 'staff' }, 'staff'),
    h('option', { value: 'owner' }, 'owner'),
  );
  const linkButton = h('button', { type: 'submit' }, 'Link a person');

  const loadUsers = async () => {
    const r = await api('GET', `/admin/v1/customers/${id}/bot-users`);
    put(users, usersTable(r.users, unbind));
  };
  const unbind = (u) => async () => {
    try {
      await api('POST', `/admin/v1/bot-users/${encodeURIComponent(u.user_id)}/unbind`);
    } catch (err) {
      return status.error(err);
    }
    // The list is read again before the line says it is done, so what it says is what is shown.
    await loadUsers().catch(() => {});
    status.ok(`Unbound ${personName(u)}: the bot treats them as unlinked from now on.`);
  };

  const form = h(
    'form.inline',
    {
      'data-form': 'bot-link',
      write: true,
      confirm: () =>
        `Make a link that binds one Telegram user to customer ${id} as ${role.value}? It is shown once, works once and expires in 24 h.`,
      onsubmit: async (e) => {
        e.preventDefault();
        try {
          const r = await api('POST', `/admin/v1/customers/${id}/bot-links`, { role: role.value });
          put(
            secret,
            h(
              'strong',
              `Link for ${role.value === 'owner' ? 'an owner' : 'a staff member'} (shown only this once, copy it now): `,
            ),
            h('code', { 'data-secret': 'bot-url' }, r.url),
            ' ',
            h('button', { type: 'button', onclick: () => navigator.clipboard?.writeText(r.url) }, 'Copy'),
            h(
              'p.muted',
              { 'data-note': 'bot-link' },
              `Single use: the first Telegram user to open it is bound. It expires in 24 h (${when(r.expires_at)}).`,
            ),
          );
          secret.hidden = false;
          // What an earlier action reported is no longer news.
          status.el.replaceChildren();
          status.el.removeAttribute('data-state');
        } catch (err) {
          status.error(err);
        }
      },
    },
    role,
    linkButton,
    h('span.muted', 'staff: redeem, check and stock; owner: also the wallet, top-ups and alerts'),
  );

  const loadBot = async () => {
    const bot = await api('GET', '/admin/v1/bot');
    // The API refuses a link without a bot (409): say so before anyone tries.
    const on = bot.enabled;
    role.disabled = !on;
    linkButton.disabled = !on;
    offNote.hidden = on;
    put(offNote, on ? '' : 'The chat bot is off (no BOT_TOKEN is set): no link can be made.');
  };

  const section = h(
    'section',
    { 'data-section': 'bot' },
    h('h3', 'Chat bot'),
    users,
    form,
    offNote,
    secret,
    status.el,
    h('p.muted', h('a', { href: `#/topups?customer_id=${id}` }, 'Top-up requests of this customer')),
  );
  section.ready = Promise.all([loadBot(), loadUsers()]).catch((err) => status.error(err));
  return section;
}

function usersTable(users, unbind) {
  if (users.length === 0)
    return h('p.muted', { 'data-note': 'no-bot-users' }, 'No one is bound to the bot yet.');
  return table(
    [
      ['Username', (u) => (u.username ? `@${u.username}` : '—')],
      ['Telegram id', (u) => String(u.telegram_user_id)],
      ['Role', (u) => u.role],
      ['Bound', (u) => when(u.bound_at)],
      ['Last seen', (u) => when(u.last_seen_at)],
      [
        '',
        (u) =>
          h(
            'button',
            {
              type: 'button',
              'data-unbind': u.user_id,
              write: true,
              confirm: `Unbind ${personName(u)} (${u.role}) from this customer? The bot treats them as unlinked from then on.`,
              onclick: unbind(u),
            },
            'Unbind',
          ),
      ],
    ],
    users,
    { 'data-table': 'bot-users' },
  );
}
