// A customer's account controls: disable and enable (a disabled customer's page says so at the
// top), and the plan and subscription with their forms. Every change asks for confirmation first
// (the console's pattern, dom.js) and reads the whole customer again after it.
import { api } from './api.js';
import { formValues, h, statusLine, usd, usdProblem, when } from './dom.js';

const dl = (pairs) =>
  h(
    'dl',
    pairs.map(([k, v]) => [h('dt', k), h('dd', v ?? '—')]),
  );

/** The banner of a disabled customer with its Enable button, or the Disable button. */
export function accountBar(c, id, reload) {
  const status = statusLine();
  const change = (verb) => async () => {
    try {
      await api('POST', `/admin/v1/customers/${id}/${verb}`);
      await reload(verb === 'enable' ? 'Customer enabled: its keys work again.' : 'Customer disabled.');
    } catch (err) {
      status.error(err);
    }
  };
  if (c.customer.disabled)
    return h(
      'div.banner.disabled',
      { role: 'alert', 'data-banner': 'disabled' },
      h('strong', `Disabled since ${when(c.customer.disabled_at)}.`),
      ' Every key of this customer is refused (403 unknown_customer), its queued jobs fail and its webhooks are not sent. Actions that cannot work are hidden.',
      ' ',
      h(
        'button',
        {
          type: 'button',
          'data-action': 'enable',
          write: true,
          confirm: `Enable customer ${id} (${c.customer.name})? Its keys that are not revoked or expired work again at once.`,
          onclick: change('enable'),
        },
        'Enable customer',
      ),
      status.el,
    );
  return h(
    'div.account-actions',
    h(
      'button.danger',
      {
        type: 'button',
        'data-action': 'disable',
        write: true,
        confirm: `Disable customer ${id} (${c.customer.name})? Every key of it is refused from then on, its queued jobs fail and its webhooks stop.`,
        onclick: change('disable'),
      },
      'Disable customer',
    ),
    status.el,
  );
}

function planForm(c, id, reload, status) {
  const p = c.plan ?? { label: '', daily_limit: null, per_request_usd: 0, overage: false, active: true };
  const form = h(
    'form.stacked',
    {
      'data-form': 'plan',
      write: true,
      confirm: () => {
        const v = formValues(form);
        const problem =
          usdProblem(v.per_request_usd, 'nonnegative') ??
          (v.daily_limit.trim() !== '' && !/^\d+$/.test(v.daily_limit.trim())
            ? 'The daily include is a whole number, or empty for none.'
            : null);
        if (problem) {
          status.error({ message: problem });
          return false;
        }
        const limit = v.daily_limit.trim() === '' ? 'no include' : `${v.daily_limit.trim()} a day included`;
        return `Set the plan of customer ${id} to "${v.label}": ${limit}, ${usd(v.per_request_usd)} a request, overage ${v.overage.length ? 'billed' : 'refused'}, ${v.active.length ? 'active' : 'inactive'}?`;
      },
      onsubmit: async (e) => {
        e.preventDefault();
        const v = formValues(form);
        try {
          await api('PUT', `/admin/v1/customers/${id}/plan`, {
            label: v.label,
            daily_limit: v.daily_limit.trim() === '' ? null : Number(v.daily_limit.trim()),
            per_request_usd: v.per_request_usd.trim(),
            overage: v.overage.length > 0,
            active: v.active.length > 0,
          });
          await reload('Plan set.');
        } catch (err) {
          status.error(err);
        }
      },
    },
    h('label', 'Label ', h('input', { name: 'label', value: p.label, required: true, maxlength: 100 })),
    h(
      'label',
      'Daily include ',
      h('input', {
        name: 'daily_limit',
        value: p.daily_limit ?? '',
        inputmode: 'numeric',
        placeholder: 'empty: none',
      }),
    ),
    h(
      'label',
      'Per request (USD) ',
      h('input', {
        name: 'per_request_usd',
        value: String(p.per_request_usd),
        inputmode: 'decimal',
        required: true,
      }),
    ),
    h(
      'label',
      h('input', { type: 'checkbox', name: 'overage', value: 'on', checked: p.overage }),
      ' overage billed',
    ),
    h('label', h('input', { type: 'checkbox', name: 'active', value: 'on', checked: p.active }), ' active'),
    h('button', { type: 'submit' }, c.plan ? 'Change plan' : 'Set plan'),
  );
  return form;
}

function subscriptionForm(c, id, reload, status) {
  const s = c.subscription;
  const form = h(
    'form.inline',
    {
      'data-form': 'subscription',
      write: true,
      confirm: () => {
        const v = formValues(form);
        return v.required.length
          ? `Require a subscription of customer ${id}, ${v.expires_at ? `expiring ${v.expires_at} 00:00 UTC` : 'with no expiry'}?`
          : `Set customer ${id}'s subscription to not required?`;
      },
      onsubmit: async (e) => {
        e.preventDefault();
        const v = formValues(form);
        try {
          await api('PUT', `/admin/v1/customers/${id}/subscription`, {
            required: v.required.length > 0,
            expires_at: v.expires_at ? `${v.expires_at}T00:00:00Z` : null,
          });
          await reload('Subscription set.');
        } catch (err) {
          status.error(err);
        }
      },
    },
    h(
      'label',
      h('input', { type: 'checkbox', name: 'required', value: 'on', checked: s.required }),
      ' required',
    ),
    h(
      'label',
      ' expires ',
      h('input', { type: 'date', name: 'expires_at', value: s.expires_at ? s.expires_at.slice(0, 10) : '' }),
    ),
    h('button', { type: 'submit' }, 'Set subscription'),
  );
  return form;
}

/** Plan, subscription and today's usage, each with its form. */
export function planSection(c, id, reload) {
  const status = statusLine();
  const plan = c.plan;
  const remove = plan
    ? h(
        'button',
        {
          type: 'button',
          'data-action': 'delete-plan',
          write: true,
          confirm: `Remove the plan of customer ${id}? Its redeems are refused (402 no_plan) until it has one.`,
          onclick: async () => {
            try {
              await api('DELETE', `/admin/v1/customers/${id}/plan`);
              await reload('Plan removed.');
            } catch (err) {
              status.error(err);
            }
          },
        },
        'Remove plan',
      )
    : null;
  return h(
    'section',
    { id: 'plan' },
    h('h3', 'Plan'),
    plan
      ? dl([
          ['Label', plan.label],
          ['Daily include', plan.daily_limit ?? 'uncapped (every request from the wallet)'],
          ['Per request', usd(plan.per_request_usd)],
          ['Overage', plan.overage ? 'billed from the wallet' : 'refused'],
          ['Active', plan.active ? 'yes' : 'no'],
        ])
      : h('p.muted', 'No plan: redeems are refused (402 no_plan).'),
    h(
      'details',
      { write: true },
      h('summary', plan ? 'Change the plan' : 'Set a plan'),
      planForm(c, id, reload, status),
      remove,
    ),
    h('h3', 'Subscription'),
    dl([
      ['Required', c.subscription.required ? 'yes' : 'no'],
      ['Expires', when(c.subscription.expires_at)],
      ['Active', c.subscription.active ? 'yes' : 'no'],
    ]),
    h(
      'details',
      { write: true },
      h('summary', 'Change the subscription'),
      subscriptionForm(c, id, reload, status),
    ),
    status.el,
    h('h3', 'Used today'),
    dl(
      Object.entries(c.usage_today).map(([m, u]) => [m, `${u.used} requests (${u.overage} from the wallet)`]),
    ),
  );
}

const SECTION_LABELS = {
  health: 'Health',
  account: 'Plan & wallets',
  keys: 'API keys',
  bot: 'Chat bot',
  ledger: 'Ledger',
  stock: 'Stock',
  usage: 'Usage',
  statement: 'Statement',
  webhooks: 'Webhooks',
  requests: 'Refused requests',
};

/**
 * A bar that stays at the top while the page scrolls, one button per section. Buttons, not
 * `#anchor` links: the hash is the console's route.
 */
export function sectionBar(parts) {
  return h(
    'nav.sections',
    { 'aria-label': 'sections of this customer' },
    Object.entries(parts).map(([name, el]) =>
      h(
        'button.link',
        { type: 'button', 'data-goto': name, onclick: () => el.scrollIntoView({ block: 'start' }) },
        SECTION_LABELS[name],
      ),
    ),
  );
}
