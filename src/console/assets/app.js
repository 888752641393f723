// The console's shell: sign-in, navigation and a hash router (#/overview, #/customers/42, …).
// Each page is a module exporting render(main, params); pages only talk to the admin API.
import { session, signIn, signOut, whenSignedOut } from './api.js';
import { h, put, statusLine } from './dom.js';
import * as audit from './page-audit.js';
import * as customers from './page-customers.js';
import * as jobs from './page-jobs.js';
import * as operators from './page-operators.js';
import * as overview from './page-overview.js';
import * as quarantine from './page-quarantine.js';
import * as requests from './page-requests.js';
import * as topups from './page-topups.js';
import * as webhooks from './page-webhooks.js';

const app = document.getElementById('app');

const ROUTES = [
  [/^#\/overview$/, overview.render, 'overview'],
  [/^#\/customers$/, customers.renderList, 'customers'],
  [/^#\/customers\/(\d+)$/, customers.renderDetail, 'customers'],
  [/^#\/jobs$/, jobs.renderList, 'jobs'],
  [/^#\/jobs\/(job_[A-Za-z0-9_-]+)$/, jobs.renderDetail, 'jobs'],
  [/^#\/quarantine$/, quarantine.render, 'quarantine'],
  [/^#\/requests$/, requests.render, 'requests'],
  [/^#\/topups$/, topups.render, 'topups'],
  [/^#\/webhooks$/, webhooks.render, 'webhooks'],
  [/^#\/audit$/, audit.render, 'audit'],
  [/^#\/operators$/, operators.render, 'operators'],
];

function showSignIn(message) {
  const status = statusLine();
  if (message) status.error({ message });
  const input = h('input', {
    type: 'password',
    name: 'token',
    autocomplete: 'current-password',
    required: true,
    id: 'token',
  });
  const form = h(
    'form.signin',
    {
      onsubmit: async (e) => {
        e.preventDefault();
        try {
          await signIn(input.value);
          input.value = '';
          start();
        } catch (err) {
          status.error(err.status === 401 ? { message: 'Wrong token.' } : err);
        }
      },
    },
    h('h1', 'Redeem Gateway console'),
    h('label', { for: 'token' }, 'Operator token'),
    input,
    h('button', { type: 'submit' }, 'Sign in'),
    status.el,
    h(
      'p.muted',
      'Your operator token (root: DATA_DIR/admin-token or ADMIN_TOKEN). It is sent once; the browser keeps only a session cookie.',
    ),
  );
  put(app, form);
  input.focus();
}

let main;
let nav;
/** Nav labels that are not their page's name capitalised. */
const LABELS = { topups: 'Top-ups' };

function layout(operator) {
  main = h('main');
  // A viewer's page hides every write control (console.css); the API refuses them anyway.
  document.body.dataset.role = operator.role;
  nav = h(
    'nav',
    h('strong', 'Redeem Gateway'),
    [
      'overview',
      'customers',
      'jobs',
      'requests',
      'webhooks',
      'quarantine',
      'topups',
      'audit',
      'operators',
    ].map((p) => h('a', { href: `#/${p}`, 'data-nav': p }, LABELS[p] ?? p[0].toUpperCase() + p.slice(1))),
    requests.searchBox(),
    h('span.who', { 'data-operator': operator.name }, `${operator.name} (${operator.role})`),
    h(
      'button.link',
      {
        type: 'button',
        onclick: async () => {
          await signOut().catch(() => {});
          showSignIn();
        },
      },
      'Sign out',
    ),
  );
  put(app, nav, main);
}

async function route() {
  if (!main) return;
  const path = (location.hash || '#/overview').split('?')[0];
  for (const [pattern, render, section] of ROUTES) {
    const m = pattern.exec(path);
    if (!m) continue;
    for (const a of nav.querySelectorAll('a')) a.classList.toggle('active', a.dataset.nav === section);
    // Each navigation renders into a view of its own: a page still loading when the operator
    // moves on writes into its detached view, never over the page that replaced it.
    const view = h('div.view');
    put(main, view);
    put(view, h('p.muted', 'Loading…'));
    try {
      await render(view, ...m.slice(1));
    } catch (err) {
      if (err.status !== 401)
        put(view, h('p.status', { 'data-state': 'error' }, `Could not load: ${err.message}`));
    }
    return;
  }
  location.hash = '#/overview';
}

async function start() {
  const s = await session().catch(() => ({ signed_in: false }));
  if (!s.signed_in) return showSignIn();
  layout(s.operator);
  route();
}

whenSignedOut(() => {
  main = undefined;
  showSignIn('Your session has ended: sign in again.');
});
window.addEventListener('hashchange', route);
start();
