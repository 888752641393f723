// Customers: search and create; one customer with plan, subscription, keys (issue: the secret is
// shown once; revoke), wallets with top-up and the ledger a page at a time, stock counts with an
// import from a file, and a usage plot.
import { api, qs } from './api.js';
import { BILLING_SERIES, OUTCOME_SERIES, usagePlot } from './charts.js';
import { formValues, h, pagedTable, put, statusLine, table, when } from './dom.js';
import { accountBar, planSection, sectionBar } from './page-customer-account.js';
import { botSection } from './page-customer-bot.js';
import { healthSection } from './page-customer-health.js';
import { eventsSection, statementSection } from './page-customer-reconcile.js';
import { requestsSection } from './page-requests.js';
import { ledgerSection, walletSection } from './page-wallet.js';
import { receiversSection } from './page-webhooks.js';

/** Codes per import request, at most (the admin API's limit). */
const IMPORT_BATCH = 10_000;

export async function renderList(main) {
  const q = new URLSearchParams(location.hash.split('?')[1] ?? '').get('q') ?? '';
  const status = statusLine();
  const { tbody, more, load } = pagedTable({
    fetchPage: (cursor) => api('GET', `/admin/v1/customers${qs({ q, cursor })}`),
    rowsOf: (page) => page.customers,
    row: (c) =>
      h(
        'tr',
        h('td', h('a', { href: `#/customers/${c.customer_id}` }, c.customer_id)),
        h('td', h('a', { href: `#/customers/${c.customer_id}` }, c.name)),
        h('td', c.plan ? `${c.plan.label}${c.plan.active ? '' : ' (inactive)'}` : 'no plan'),
        h('td', c.disabled ? 'disabled' : 'active'),
        ['live', 'test'].map((m) => h('td', { 'data-health': m }, healthCell(c.health?.[m]))),
        h('td', when(c.created_at)),
      ),
    empty: 'no customers',
    colspan: 7,
    status,
  });
  const search = h('input', {
    type: 'search',
    name: 'q',
    value: q,
    placeholder: 'name or id',
    'aria-label': 'search customers',
  });
  const create = h(
    'form.inline',
    {
      'data-form': 'create-customer',
      write: true,
      onsubmit: async (e) => {
        e.preventDefault();
        try {
          const r = await api('POST', '/admin/v1/customers', { name: formValues(create).name });
          location.hash = `#/customers/${r.customer_id}`;
        } catch (err) {
          status.error(err);
        }
      },
    },
    h('input', {
      name: 'name',
      placeholder: 'new customer name',
      required: true,
      'aria-label': 'new customer name',
    }),
    h('button', { type: 'submit' }, 'Create customer'),
  );
  put(
    main,
    h('header.page', h('h2', 'Customers')),
    h(
      'form.inline',
      {
        onsubmit: (e) => {
          e.preventDefault();
          location.hash = `#/customers${qs({ q: search.value.trim() })}`;
        },
      },
      search,
      h('button', { type: 'submit' }, 'Search'),
    ),
    create,
    status.el,
    h(
      'table',
      { 'data-table': 'customers' },
      h(
        'thead',
        h(
          'tr',
          ['Id', 'Name', 'Plan', 'State', 'Live', 'Test', 'Created'].map((t) => h('th', t)),
        ),
      ),
      tbody,
    ),
    more,
  );
  await load();
}

/** A mode's health in the list: its receiver's run of failures and since when, refusals today. */
function healthCell(m) {
  if (!m) return '—';
  const hook = !m.webhook
    ? h('span.muted', 'no webhook')
    : m.webhook.consecutive_failures > 0
      ? h(
          'span.badge.failed',
          `webhook failing ×${m.webhook.consecutive_failures}${m.webhook.failing_since ? ` since ${when(m.webhook.failing_since)}` : ''}`,
        )
      : h('span', 'webhook ok');
  return [
    hook,
    h('br'),
    m.refused_today > 0
      ? h(
          'span',
          { 'data-cell': 'refused' },
          `${m.refused_today} refused today: ${m.refused_by_error_code
            .map((c) => `${c.error_code ?? 'no error code'} ×${c.count}`)
            .join(', ')}`,
        )
      : h('span.muted', 'none refused today'),
  ];
}

export async function renderDetail(main, id, flash) {
  const [c, health] = await Promise.all([
    api('GET', `/admin/v1/customers/${id}`),
    api('GET', `/admin/v1/customers/${id}/health`),
  ]);
  const base = `/admin/v1/customers/${id}`;
  // After a change the whole customer is read again, with a line saying what was done.
  const reload = (message) => renderDetail(main, id, message);
  // The event log and statement open on the mode in trouble (a failing receiver, more refusals
  // today), else on the mode the customer has live keys for, else test.
  const mode = health.trouble_first ?? (c.keys.some((k) => k.mode === 'live') ? 'live' : 'test');
  const events = eventsSection(id, mode);
  const statement = statementSection(id, mode);
  const bot = botSection(id);
  const receivers = receiversSection(id);
  const requests = requestsSection(id);
  const parts = {
    health: healthSection(id, health),
    account: h('div.columns', planSection(c, id, reload), walletSection(c, base, reload, id)),
    keys: keysSection(c, id),
    bot,
    ledger: ledgerSection(c, base),
    stock: stockSection(c, base, reload),
    usage: await usageSection(id),
    statement,
    webhooks: h('div', receivers, events),
    requests,
  };
  // A disabled customer's page hides what cannot work (console.css: [data-needs-enabled]).
  main.toggleAttribute('data-customer-disabled', c.customer.disabled);
  put(
    main,
    h(
      'header.page',
      h('h2', c.customer.name, h('span.muted', ` #${id}`)),
      c.customer.disabled ? h('span.badge.failed', 'disabled') : null,
    ),
    accountBar(c, id, reload),
    flash ? h('p.status', { role: 'status', 'data-state': 'ok', 'data-flash': true }, flash) : null,
    sectionBar(parts),
    Object.values(parts),
  );
  await Promise.all([events.ready, statement.ready, bot.ready, receivers.ready, requests.ready]);
}

function keysSection(c, id) {
  const status = statusLine();
  const secret = h('div.secret', { hidden: true });
  // A new key (issued or rerolled) is shown once, here; the list shows only prefixes.
  const onSecret = async (r, note = '') => {
    put(
      secret,
      h('strong', 'New key (shown only this once, copy it now): '),
      h('code', { 'data-secret': 'key' }, r.key),
      ' ',
      h('button', { type: 'button', onclick: () => navigator.clipboard?.writeText(r.key) }, 'Copy'),
      note ? h('span.muted', ` ${note}`) : null,
    );
    secret.hidden = false;
    put(keyList, keyTable(await api('GET', `/admin/v1/customers/${id}`), status, onSecret));
  };
  const form = h(
    'form.inline',
    {
      'data-form': 'issue-key',
      'data-needs-enabled': true,
      write: true,
      onsubmit: async (e) => {
        e.preventDefault();
        const v = formValues(form);
        try {
          const r = await api('POST', `/admin/v1/customers/${id}/keys`, {
            mode: v.mode,
            scopes: v.scopes,
            allowed_ips: v.allowed_ips
              .split(',')
              .map((s) => s.trim())
              .filter(Boolean),
            expires_at: v.expires_at ? `${v.expires_at}T00:00:00Z` : null,
            label: v.label,
          });
          await onSecret(r);
        } catch (err) {
          status.error(err);
        }
      },
    },
    h(
      'select',
      { name: 'mode', 'aria-label': 'key mode' },
      h('option', { value: 'test' }, 'test'),
      h('option', { value: 'live' }, 'live'),
    ),
    h('label', h('input', { type: 'checkbox', name: 'scopes', value: 'redeem', checked: true }), ' redeem'),
    h('label', h('input', { type: 'checkbox', name: 'scopes', value: 'read', checked: true }), ' read'),
    h('input', { name: 'label', placeholder: 'label', 'aria-label': 'key label' }),
    h('input', {
      name: 'allowed_ips',
      placeholder: 'allowed IPs/CIDRs, comma-separated',
      'aria-label': 'allowed IPs',
    }),
    h('label', 'expires ', h('input', { type: 'date', name: 'expires_at' })),
    h('button', { type: 'submit' }, 'Issue key'),
  );
  const keyList = h('div', keyTable(c, status, onSecret));
  return h('section', h('h3', 'API keys'), form, secret, status.el, keyList);
}

function keyTable(c, status, onSecret) {
  const revoke = (k) => async (e) => {
    e.target.disabled = true;
    try {
      await api('POST', `/admin/v1/keys/${encodeURIComponent(k.key_id)}/revoke`);
      status.ok(`Revoked ${k.key_prefix}….`);
      const row = e.target.closest('tr');
      row.querySelector('[data-cell=revoked]').textContent = 'revoked now';
      e.target.remove();
    } catch (err) {
      status.error(err);
      e.target.disabled = false;
    }
  };
  // The grace is asked for in a dialog: cancelling it is the confirmation's "no".
  const reroll = (k) => async () => {
    const grace = window.prompt(
      `Reroll the key ${k.key_prefix}…: a new key is shown once. Seconds the old key keeps working:`,
      '86400',
    );
    if (grace === null) return;
    try {
      const r = await api('POST', `/admin/v1/keys/${encodeURIComponent(k.key_id)}/reroll`, {
        grace_seconds: Number(grace),
      });
      onSecret(r, `The old key works until ${when(r.old_key_expires_at)}.`);
    } catch (err) {
      status.error(err);
    }
  };
  return table(
    [
      ['Prefix', (k) => h('code', k.key_prefix)],
      ['Mode', (k) => k.mode],
      ['Scopes', (k) => k.scopes.join(', ')],
      ['Allowed IPs', (k) => k.allowed_ips.join(', ') || 'any'],
      ['Label', (k) => k.label],
      ['Created', (k) => when(k.created_at)],
      ['Expires', (k) => when(k.expires_at)],
      ['Revoked', (k) => h('span', { 'data-cell': 'revoked' }, k.revoked_at ? when(k.revoked_at) : '—')],
      [
        '',
        (k) =>
          k.revoked_at
            ? ''
            : [
                h(
                  'button',
                  {
                    type: 'button',
                    'data-revoke': k.key_id,
                    write: true,
                    confirm: `Revoke the key ${k.key_prefix}…? It answers 401 revoked from then on.`,
                    onclick: revoke(k),
                  },
                  'Revoke',
                ),
                h(
                  'button',
                  {
                    type: 'button',
                    'data-reroll': k.key_id,
                    'data-needs-enabled': true,
                    write: true,
                    onclick: reroll(k),
                  },
                  'Reroll',
                ),
              ],
      ],
    ],
    c.keys,
    { 'data-table': 'keys' },
  );
}

function stockSection(c, base, reload) {
  const status = statusLine();
  const categories = c.stock.live.categories.map((x) => x.category);
  const form = h(
    'form.inline',
    {
      'data-form': 'import',
      'data-needs-enabled': true,
      write: true,
      onsubmit: async (e) => {
        e.preventDefault();
        const v = formValues(form);
        const file = form.elements.file.files[0];
        if (!file) return status.error({ message: 'Choose a file with one code per line.' });
        // Codes go from the file to the API; they are never shown on the page.
        const codes = (await file.text())
          .split(/\r?\n/)
          .map((s) => s.trim())
          .filter(Boolean);
        const sum = { added: 0, duplicates: 0, rejected: 0 };
        try {
          for (let i = 0; i < codes.length; i += IMPORT_BATCH) {
            const r = await api('POST', `${base}/stock`, {
              mode: v.mode,
              category: v.category,
              codes: codes.slice(i, i + IMPORT_BATCH),
            });
            for (const k of Object.keys(sum)) sum[k] += r[k];
          }
          await reload(
            `Imported into ${v.mode} ${v.category} UC: ${sum.added} added, ${sum.duplicates} duplicates, ${sum.rejected} rejected.`,
          );
        } catch (err) {
          status.error(err);
        }
      },
    },
    h(
      'select',
      { name: 'mode', 'aria-label': 'stock mode' },
      h('option', { value: 'live' }, 'live'),
      h('option', { value: 'test' }, 'test'),
    ),
    h(
      'select',
      { name: 'category', 'aria-label': 'category' },
      categories.map((x) => h('option', { value: x }, `${x} UC`)),
    ),
    h('input', { type: 'file', name: 'file', accept: '.txt,.csv,text/plain', 'aria-label': 'codes file' }),
    h('button', { type: 'submit' }, 'Import'),
  );
  const counts = (mode) =>
    table(
      [
        ['Category', (x) => `${x.category} UC`],
        ['Available', (x) => x.available],
        ['Reserved', (x) => x.reserved],
        ['Quarantined', (x) => x.quarantined],
      ],
      c.stock[mode].categories,
      { 'data-table': `stock-${mode}` },
    );
  return h(
    'section',
    h('h3', 'Stock'),
    h(
      'div.columns',
      ['live', 'test'].map((m) =>
        // The counts by category one click away: the page stays short.
        h(
          'details',
          h(
            'summary',
            `${m}: ${c.stock[m].total_available} codes, ${c.stock[m].total_uc_available} UC available`,
          ),
          counts(m),
        ),
      ),
    ),
    form,
    status.el,
  );
}

async function usageSection(id) {
  const daily = await api('GET', `/admin/v1/usage${qs({ granularity: 'day', customer_id: id })}`);
  return h(
    'section',
    h('h3', 'Usage, last 30 days (live and test)'),
    h(
      'div.plots',
      usagePlot('customer-daily', 'Redeems per day by outcome', daily, OUTCOME_SERIES),
      usagePlot('customer-billing', 'Billed and refunded per day', daily, BILLING_SERIES),
    ),
  );
}
