// Building the page without innerHTML: every value is a text node, so nothing an API returns can
// become markup (and the CSP forbids inline script and style anyway).
import { downloadCsv } from './api.js';

/** h('div.card#x', {onclick, ...attrs}, child, ...): an element; strings become text nodes. */
export function h(tag, attrs, ...children) {
  const [name, ...classes] = tag.split('.');
  const el = document.createElement(name);
  if (classes.length) el.className = classes.join(' ');
  // Anything but a plain object in the attributes' place is the first child (0 and '' included).
  if (
    attrs !== undefined &&
    (attrs === null || typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs))
  ) {
    children.unshift(attrs);
    attrs = null;
  }
  const { confirm: ask, write, ...rest } = attrs ?? {};
  // A change the viewer may not make: hidden for a viewer (console.css), refused by the API anyway.
  if (write) el.setAttribute('data-write', '');
  for (const [k, v] of Object.entries(rest)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'onclick' || k === 'onsubmit') el.addEventListener(k.slice(2), guarded(el, v, ask));
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'value') el.value = v;
    else if (k === 'checked') el.checked = Boolean(v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

/**
 * A click or submit handler that asks first when `ask` is given (a text, or a function of the
 * event giving one; docs/reference/operators-and-audit.md#wallet-top-ups-and-adjustments: money, revoke, reroll, settle) and cannot run twice at once:
 * while it runs, the element (a form: its submit buttons) is disabled and further events dropped,
 * so a double click sends one request.
 */
function guarded(el, handler, ask) {
  let busy = false;
  return async (e) => {
    if (busy) return e.preventDefault();
    const question = typeof ask === 'function' ? ask(e) : ask;
    // `false`: the form's values were refused before asking (the asker said why); nothing is sent.
    if (question === false || (question && !window.confirm(question))) return e.preventDefault();
    busy = true;
    const buttons = el.tagName === 'FORM' ? [...el.querySelectorAll('button[type=submit]')] : [el];
    for (const b of buttons) b.disabled = true;
    try {
      return await handler(e);
    } finally {
      busy = false;
      for (const b of buttons) if (b.isConnected) b.disabled = false;
    }
  };
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Replaces the element's content. */
export function put(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A table from rows; `columns` is [[title, row => cell], …]. */
export function table(columns, rows, attrs = {}) {
  return h(
    'table',
    attrs,
    h(
      'thead',
      h(
        'tr',
        columns.map(([title]) => h('th', title)),
      ),
    ),
    h(
      'tbody',
      rows.length === 0
        ? h('tr', h('td.muted', { colspan: columns.length }, 'nothing here'))
        : rows.map((row) =>
            h(
              'tr',
              columns.map(([, cell]) => h('td', cell(row))),
            ),
          ),
    ),
  );
}

export const when = (iso) => (iso ? iso.replace('T', ' ').replace('Z', ' UTC') : '—');
export const last4 = (s) => (s ? `…${s}` : '—');
/** Dollars as people write them: the sign before the dollar sign (`-$0.05`, never `$-0.05`). */
export const usd = (n) => {
  const v = Number(n);
  const text = `$${Math.abs(v).toLocaleString('en-US', { maximumFractionDigits: 6 })}`;
  return v < 0 ? `-${text}` : text;
};

/**
 * Why a typed dollar amount cannot be sent, or null when it can: the admin API's rule (a decimal
 * with at most 6 decimals, at most 1,000,000 either way), checked before the operator is asked to
 * confirm it. `sign`: 'positive' (a top-up), 'nonzero' (an adjustment), 'nonnegative' (a price).
 */
export function usdProblem(text, sign) {
  const t = String(text).trim();
  if (!/^-?(\d+(\.\d{1,6})?|\.\d{1,6})$/.test(t))
    return `"${t}" is not a dollar amount with at most 6 decimals.`;
  const v = Number(t);
  if (Math.abs(v) > 1_000_000) return 'The amount is at most $1,000,000.';
  if (sign === 'positive' && !(v > 0)) return 'A top-up is more than $0 (an adjustment can take money away).';
  if (sign === 'nonzero' && v === 0) return 'An adjustment is not $0.';
  if (sign === 'nonnegative' && (v < 0 || t.startsWith('-'))) return 'A price is not negative.';
  return null;
}

/** Values of a form's named fields. */
export function formValues(form) {
  const out = {};
  for (const el of form.elements) {
    if (!el.name) continue;
    if (el.type === 'checkbox') {
      out[el.name] ??= [];
      if (el.checked) out[el.name].push(el.value);
    } else out[el.name] = el.value;
  }
  return out;
}

/** A line that reports the outcome of an action (role=status, read by screen readers). */
export function statusLine() {
  const el = h('p.status', { role: 'status' });
  return {
    el,
    ok: (text) => put(el, text) && el.setAttribute('data-state', 'ok'),
    error: (err) => put(el, err.message ?? String(err)) && el.setAttribute('data-state', 'error'),
  };
}

/**
 * The body of a paged table and its "More" button (`label`): `fetchPage(cursor)` answers one page
 * of an admin list (`next_cursor` null on the last), `rowsOf(page)` its items, `row(item)` a row.
 * `load()` appends the next page (the first while none is loaded) and throws what the API
 * answered; the button shows while a next page exists, and a click's error goes to `status`.
 * `reset()` empties the table and loads the first page again. `empty` fills a table with no row.
 */
export function pagedTable({ fetchPage, rowsOf, row, empty, colspan, status, label = 'More' }) {
  const tbody = h('tbody');
  const more = h('button', { type: 'button', hidden: true }, label);
  let cursor = null;
  const load = async () => {
    const page = await fetchPage(cursor);
    for (const item of rowsOf(page)) tbody.append(row(item));
    if (!tbody.children.length) tbody.append(h('tr', h('td.muted', { colspan }, empty)));
    cursor = page.next_cursor;
    more.hidden = !cursor;
  };
  more.addEventListener('click', () => load().catch(status.error));
  const reset = () => {
    cursor = null;
    tbody.replaceChildren();
    return load();
  };
  return { tbody, more, load, reset };
}

/** A "Download CSV" button for an admin list's export (`path` asks for format=csv). */
export function csvButton(name, path, fallbackName, status) {
  return h(
    'button',
    {
      type: 'button',
      'data-download': name,
      onclick: () => downloadCsv(path(), fallbackName).catch(status.error),
    },
    'Download CSV',
  );
}
