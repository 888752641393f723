// Quarantine: codes whose outcome is unknown (an upstream timeout after sending). Check them now
// with the upstream, or settle one by hand after checking it some other way.
import { api } from './api.js';
import { h, last4, put, statusLine, table, when } from './dom.js';

export async function render(main) {
  const status = statusLine();
  const list = h('div');
  const load = async () => {
    const { codes } = await api('GET', '/admin/v1/quarantine');
    const settle = (c, outcome) => async (e) => {
      e.target.disabled = true;
      try {
        await api('POST', `/admin/v1/jobs/${c.job_id}/codes/${c.position}/settle`, { outcome });
        status.ok(`Settled ${last4(c.code_last4)} of ${c.job_id} as ${outcome}.`);
        await load();
      } catch (err) {
        status.error(err);
        e.target.disabled = false;
      }
    };
    put(
      list,
      table(
        [
          ['Job', (c) => h('a', { href: `#/jobs/${c.job_id}` }, c.job_id)],
          ['#', (c) => c.position],
          ['Customer', (c) => h('a', { href: `#/customers/${c.customer_id}` }, c.customer_id)],
          ['Mode', (c) => c.mode],
          ['Source', (c) => c.source],
          ['Code', (c) => last4(c.code_last4)],
          ['Category', (c) => c.category ?? '—'],
          ['Since', (c) => when(c.quarantined_at)],
          ['Checks', (c) => c.check_attempts],
          [
            'Settle',
            (c) => [
              settleButton(c, 'used', settle, 'Used'),
              ' ',
              settleButton(c, 'unused', settle, 'Unused'),
            ],
          ],
        ],
        codes,
        { 'data-table': 'quarantine' },
      ),
    );
  };
  const check = h(
    'button',
    {
      type: 'button',
      write: true,
      onclick: async () => {
        check.disabled = true;
        try {
          const r = await api('POST', '/admin/v1/quarantine/check');
          status.ok(`Checked ${r.checked}: ${r.used} used, ${r.unused} unused, ${r.unknown} still unknown.`);
          await load();
        } catch (err) {
          status.error(err);
        } finally {
          check.disabled = false;
        }
      },
    },
    'Check now',
  );
  put(
    main,
    h('header.page', h('h2', 'Quarantine'), check),
    h(
      'p.muted',
      '"Used" deletes a stock code and bills one request as code_used; "unused" returns a stock code to stock. The caller’s recorded answer never changes.',
    ),
    status.el,
    list,
  );
  await load();
}

const settleButton = (c, outcome, settle, label) =>
  h(
    'button',
    {
      type: 'button',
      'data-settle': outcome,
      write: true,
      confirm: `Settle ${last4(c.code_last4)} of ${c.job_id} as ${outcome}? ${
        outcome === 'used' ? 'One request is billed as code_used.' : 'A stock code goes back to stock.'
      }`,
      onclick: settle(c, outcome),
    },
    label,
  );
