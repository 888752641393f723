// Quarantine: codes whose outcome is unknown (an upstream timeout after sending). Check them now
// with the upstream, or settle one by hand after checking it some other way. Below, the codes
// settled in the last week: how each settled (used: billed as code_used; unused: not billed), by
// the status check or an operator's word, who, and when.
import { api } from './api.js';
import { h, last4, put, statusLine, table, when } from './dom.js';

export async function render(main) {
  const status = statusLine();
  const list = h('div');
  const settledList = h('div');
  const load = async () => {
    const { codes, settled, settled_days: days } = await api('GET', '/admin/v1/quarantine');
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
    put(settledList, h('h3', `Settled in the last ${days} days`), settledTable(settled));
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
    settledList,
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

/** What settled a code and who: the automatic check, a check an operator ran, or an operator by hand. */
const settledBy = (c) =>
  c.settled_by === 'check'
    ? c.settled_actor
      ? `status check run by ${c.settled_actor}`
      : 'status check (automatic)'
    : `${c.settled_actor ?? 'an operator'} by hand`;

/** The codes settled in the last days, newest first: how, by what and whom, when. */
const settledTable = (settled) =>
  table(
    [
      ['Job', (c) => h('a', { href: `#/jobs/${c.job_id}` }, c.job_id)],
      ['#', (c) => c.position],
      ['Customer', (c) => h('a', { href: `#/customers/${c.customer_id}` }, c.customer_id)],
      ['Mode', (c) => c.mode],
      ['Code', (c) => last4(c.code_last4)],
      [
        'Settled',
        (c) =>
          h(
            `span.badge.${c.settlement === 'used' ? 'quarantined' : 'completed'}`,
            { 'data-settlement': c.settlement },
            c.settlement === 'used' ? 'used · billed as code_used' : 'unused · not billed',
          ),
      ],
      ['By', (c) => h('span', { 'data-cell': 'settled-by' }, settledBy(c))],
      ['When', (c) => when(c.settled_at)],
      ['Quarantined', (c) => when(c.quarantined_at)],
    ],
    settled,
    { 'data-table': 'settled' },
  );
