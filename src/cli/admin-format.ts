// Human-readable text for the admin CLI's answers. `--json` bypasses all of this and prints the
// API's answer as is, so scripts never depend on these lines.

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Fields every answer carries; they say nothing to the operator. */
const ENVELOPE = new Set(['ok', 'request_id']);

/**
 * Any JSON answer as indented `name: value` lines. Used for answers whose shape this CLI does not
 * know in detail (jobs, stock counts, fields added later), so nothing the API says is hidden.
 */
export function formatGeneric(value: unknown, indent = ''): string[] {
  if (!isObject(value)) return [`${indent}${scalar(value)}`];
  const lines: string[] = [];
  for (const [name, v] of Object.entries(value)) {
    if (indent === '' && ENVELOPE.has(name)) continue;
    if (isObject(v)) {
      lines.push(`${indent}${name}:`, ...formatGeneric(v, `${indent}  `));
    } else if (Array.isArray(v) && v.some((x) => isObject(x) || Array.isArray(x))) {
      lines.push(`${indent}${name}: (${v.length})`);
      v.forEach((item, i) => {
        lines.push(`${indent}  - [${i}]`, ...formatGeneric(item, `${indent}    `));
      });
    } else {
      lines.push(`${indent}${name}: ${scalar(v)}`);
    }
  }
  return lines;
}

function scalar(v: unknown): string {
  if (v === null || v === undefined) return '-';
  if (Array.isArray(v)) return v.length ? v.map(scalar).join(', ') : '(none)';
  return String(v);
}

const onOff = (b: unknown) => (b ? 'on' : 'off');

export function describePlan(plan: unknown): string {
  if (!isObject(plan)) return 'none';
  const limit = plan.daily_limit === null ? 'uncapped' : `${plan.daily_limit} requests/day included`;
  return `${plan.label}: ${limit}, ${plan.per_request_usd} USD per request, overage ${onOff(plan.overage)}, ${
    plan.active ? 'active' : 'inactive'
  }`;
}

export function describeSubscription(sub: unknown): string {
  if (!isObject(sub) || !sub.required) return 'not required';
  if (sub.expires_at === null) return 'required, no expiry';
  return sub.active
    ? `required, active until ${sub.expires_at} (${sub.days_left} days left)`
    : `required, expired at ${sub.expires_at}`;
}

/** The answer of GET /admin/v1/customers/{id}. */
export function formatCustomer(a: Json): string[] {
  const c = isObject(a.customer) ? a.customer : {};
  const lines = [
    `customer ${c.customer_id}: ${c.name}${c.disabled ? ` (disabled at ${c.disabled_at})` : ''}`,
    `  created:      ${c.created_at}`,
    `  plan:         ${describePlan(a.plan)}`,
    `  subscription: ${describeSubscription(a.subscription)}`,
  ];
  if (isObject(a.wallets)) {
    lines.push('  wallets:');
    for (const [mode, w] of Object.entries(a.wallets)) {
      if (!isObject(w)) continue;
      lines.push(
        `    ${mode}: balance ${w.balance_usd} USD, held ${w.held_usd}, spendable ${w.spendable_usd}`,
      );
    }
  }
  if (isObject(a.usage_today)) {
    lines.push('  usage today:');
    for (const [mode, u] of Object.entries(a.usage_today)) {
      if (isObject(u)) lines.push(`    ${mode}: ${u.used} requests, ${u.overage} of them overage`);
    }
  }
  const keys = Array.isArray(a.keys) ? a.keys.filter(isObject) : [];
  lines.push(`  keys: ${keys.length ? '' : '(none)'}`.trimEnd());
  for (const k of keys) {
    const state = k.revoked_at
      ? `revoked ${k.revoked_at}`
      : k.expires_at
        ? `expires ${k.expires_at}`
        : 'no expiry';
    const ips =
      Array.isArray(k.allowed_ips) && k.allowed_ips.length ? k.allowed_ips.join(',') : 'any address';
    lines.push(
      `    ${k.key_id}  ${k.key_prefix}…  ${k.mode}  scopes ${scalar(k.scopes)}  from ${ips}  ${state}${
        k.label ? `  "${k.label}"` : ''
      }`,
    );
  }
  const stock = formatStock(a.stock);
  lines.push(...stock);
  // Whatever else the API reports (later additions) is shown as it comes.
  const known = new Set([...ENVELOPE, 'customer', 'plan', 'subscription', 'wallets', 'usage_today', 'keys']);
  if (stock.length) known.add('stock');
  const rest = Object.fromEntries(Object.entries(a).filter(([name]) => !known.has(name)));
  if (Object.keys(rest).length) lines.push(...formatGeneric(rest, '  '));
  return lines;
}

/** Stock counts per mode, one line each, naming only the categories that hold any code. */
function formatStock(stock: unknown): string[] {
  if (!isObject(stock)) return [];
  const lines = ['  stock:'];
  for (const [mode, s] of Object.entries(stock)) {
    if (!isObject(s) || !Array.isArray(s.categories)) return [];
    const held = s.categories
      .filter(isObject)
      .filter((c) => Number(c.available) + Number(c.reserved) + Number(c.quarantined) > 0)
      .map(
        (c) =>
          `${c.category}: ${c.available} available, ${c.reserved} reserved, ${c.quarantined} quarantined`,
      );
    lines.push(
      `    ${mode}: ${s.total_available} codes available (${s.total_uc_available} UC)${held.length ? `; ${held.join('; ')}` : ''}`,
    );
  }
  return lines;
}

/** The answer of GET /admin/v1/customers/{id}/ledger, newest first as the API sends it. */
export function formatLedger(a: Json): string[] {
  const entries = Array.isArray(a.entries) ? a.entries.filter(isObject) : [];
  const head = `ledger of customer ${a.customer_id} (${a.mode}), newest first:`;
  if (!entries.length) return [`${head} no entries`];
  const rows = entries.map((e) => [
    String(e.id),
    String(e.created_at),
    String(e.kind),
    String(e.amount_usd),
    String(e.balance_after_usd),
    String(e.actor ?? 'system'),
    [e.note, e.reference].filter(Boolean).join(' '),
  ]);
  return [head, ...table(['id', 'time', 'kind', 'amount_usd', 'balance_usd', 'actor', 'note'], rows)];
}

/** The answer of GET /admin/v1/customers: one table, and how to ask for the next page. */
export function formatCustomers(a: Json): string[] {
  const customers = Array.isArray(a.customers) ? a.customers.filter(isObject) : [];
  if (!customers.length) return ['no customers'];
  const rows = customers.map((c) => [
    String(c.customer_id),
    String(c.name),
    isObject(c.plan) ? `${c.plan.label}${c.plan.active ? '' : ' (inactive)'}` : 'no plan',
    c.disabled ? 'disabled' : 'active',
    String(c.created_at),
  ]);
  return [
    ...table(['id', 'name', 'plan', 'state', 'created_at'], rows),
    ...(a.next_cursor ? [`more: add --cursor ${a.next_cursor}`] : []),
  ];
}

/**
 * The answer of GET /admin/v1/quarantine: the codes held now (oldest first), then those settled
 * in the last days (newest first) with how they settled, by what and whom, and when.
 */
export function formatQuarantine(a: Json): string[] {
  const codes = Array.isArray(a.codes) ? a.codes.filter(isObject) : [];
  const settled = Array.isArray(a.settled) ? a.settled.filter(isObject) : [];
  const held = codes.length
    ? table(
        ['job', 'code', 'customer', 'mode', 'source', 'quarantined_at', 'checks'],
        codes.map((c) => [
          `${c.job_id} #${c.position}`,
          `…${c.code_last4}`,
          String(c.customer_id),
          String(c.mode),
          String(c.source),
          String(c.quarantined_at),
          String(c.check_attempts),
        ]),
      )
    : ['no quarantined codes'];
  const days = a.settled_days ?? 7;
  const done = settled.length
    ? [
        `settled in the last ${days} days:`,
        ...table(
          ['job', 'code', 'customer', 'mode', 'settled', 'by', 'settled_at'],
          settled.map((c) => [
            `${c.job_id} #${c.position}`,
            `…${c.code_last4}`,
            String(c.customer_id),
            String(c.mode),
            settlementWords(c.settlement),
            settledByWords(c.settled_by, c.settled_actor),
            String(c.settled_at),
          ]),
        ),
      ]
    : [`none settled in the last ${days} days`];
  return [...held, ...done];
}

/** `used` and `unused` in an operator's words: what happened to the code and its request. */
export const settlementWords = (s: unknown) =>
  s === 'used' ? 'used (billed as code_used)' : s === 'unused' ? 'unused (not billed)' : String(s);

/** What settled a code and who: `check (automatic)`, `check run by alice`, `alice by hand`. */
export function settledByWords(by: unknown, actor: unknown): string {
  if (by === 'check') return typeof actor === 'string' ? `check run by ${actor}` : 'check (automatic)';
  return `${typeof actor === 'string' ? actor : 'an operator'} by hand`;
}

/** Lists print as one table: two spaces in, columns two spaces apart, a header row. */
export function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    `  ${cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd()}`;
  return [line(header), ...rows.map(line)];
}
