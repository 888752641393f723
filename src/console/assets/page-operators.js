// Operators (docs/reference/operators-and-audit.md#operators-and-roles): who may sign in, with which role; an admin adds one (its token is
// shown once) or revokes one (after confirming). A viewer sees the list only.
import { api } from './api.js';
import { formValues, h, put, statusLine, table, when } from './dom.js';

export async function render(main) {
  const status = statusLine();
  const secret = h('div.secret', { hidden: true });
  const list = h('div');
  const load = async () => {
    const { operators } = await api('GET', '/admin/v1/operators');
    const revoke = (o) => async () => {
      try {
        await api('POST', `/admin/v1/operators/${encodeURIComponent(o.operator_id)}/revoke`);
        status.ok(`Revoked ${o.name}.`);
        await load();
      } catch (err) {
        status.error(err);
      }
    };
    put(
      list,
      table(
        [
          ['Name', (o) => o.name],
          ['Role', (o) => o.role],
          ['Id', (o) => h('code', o.operator_id)],
          ['Created', (o) => when(o.created_at)],
          ['Revoked', (o) => when(o.revoked_at)],
          [
            '',
            (o) =>
              o.revoked_at || o.name === 'root'
                ? ''
                : h(
                    'button',
                    {
                      type: 'button',
                      'data-revoke-operator': o.name,
                      write: true,
                      confirm: `Revoke the operator ${o.name}? Their token stops working at once.`,
                      onclick: revoke(o),
                    },
                    'Revoke',
                  ),
          ],
        ],
        operators,
        { 'data-table': 'operators' },
      ),
    );
  };
  const form = h(
    'form.inline',
    {
      'data-form': 'add-operator',
      write: true,
      onsubmit: async (e) => {
        e.preventDefault();
        const v = formValues(form);
        try {
          const r = await api('POST', '/admin/v1/operators', { name: v.name.trim(), role: v.role });
          put(
            secret,
            h('strong', `Token of ${r.name} (shown only this once, hand it over now): `),
            h('code', { 'data-secret': 'operator-token' }, r.token),
          );
          secret.hidden = false;
          form.reset();
          await load();
        } catch (err) {
          status.error(err);
        }
      },
    },
    h('input', { name: 'name', placeholder: 'name', required: true, 'aria-label': 'operator name' }),
    h(
      'select',
      { name: 'role', 'aria-label': 'role' },
      h('option', { value: 'viewer' }, 'viewer'),
      h('option', { value: 'admin' }, 'admin'),
    ),
    h('button', { type: 'submit' }, 'Add operator'),
  );
  put(main, h('header.page', h('h2', 'Operators')), form, secret, status.el, list);
  await load();
}
