// The chat side of the soak (test/ops/soak.test.ts): owners linked to the soak's customers act in
// the chat while API clients redeem and the server is killed: manual redeems (their own codes,
// codes API clients send too, packs= and uc= from stock) confirmed with Redeem (sometimes twice),
// cancelled or left alone; /topup in test mode; live /topup requests that an operator approves
// (sometimes twice, sometimes at once) or rejects. Every choice comes from the soak's PRNG; every
// wait is bounded, since a kill may swallow a reply (an update acted on just before the kill is
// not acted on again, so it is not answered again).
import type { BotApiSim, SimMessage, SimUser } from '../../src/dev/bot-api-sim.ts';
import type { BotTopups } from './invariants.ts';
import { adminHttp, type ServerProcess, TEST_ADMIN_TOKEN } from './process.ts';

export interface SoakRandom {
  rand(): number;
  int(n: number): number;
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
}

export interface ChatCustomer {
  customerId: number;
  /** Caller codes the API clients of this customer send (the chat sends some of them too). */
  callerCodes: string[];
}

interface Person {
  user: SimUser;
  customer: ChatCustomer;
  /**
   * The person's two hands take turns with the mode: a test-mode visit (top-ups) and a redeem's
   * ask-and-press never overlap, so a confirmation is shown in live mode (one shown in test mode
   * anyway, after a lost answer, is cancelled).
   */
  turn: <T>(fn: () => Promise<T>) => Promise<T>;
}

/** Runs the functions given one at a time, in the order given. */
function turns() {
  let chain: Promise<unknown> = Promise.resolve();
  return <T>(fn: () => Promise<T>): Promise<T> => {
    const run = chain.then(fn, fn);
    chain = run.catch(() => undefined);
    return run;
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const isAlert = (m: SimMessage) => Boolean(m.text?.includes('\nAlert: '));
const END = /Redeem (finished|interrupted by a server restart|failed on the service side) \((job_\w+)\)/;

export function createSoakChat(deps: {
  sim: BotApiSim;
  random: SoakRandom;
  server: () => ServerProcess;
  /** A new caller code, known to the invariant check; its suffix tells the upstream simulator what to answer. */
  newCallerCode: (suffix: string) => string;
  categories: readonly string[];
  ucTargets: readonly number[];
}) {
  const { sim } = deps;
  const { rand, int, chance, pick } = deps.random;
  const people: Person[] = [];
  const stats = {
    redeemsAsked: 0,
    confirmations: 0,
    /** Confirmations not in live mode: cancelled (the soak redeems live only). */
    notLive: 0,
    refused: {} as Record<string, number>,
    pressedRedeem: 0,
    pressedTwice: 0,
    cancelled: 0,
    leftUnpressed: 0,
    startedSeen: 0,
    ends: {} as Record<string, number>,
    testTopupsSent: 0,
    testTopupsConfirmed: 0,
    liveRequestsSent: 0,
    liveRequestsSeen: 0,
    approveCalls: 0,
    approvedTwice: 0,
    rejectCalls: 0,
    /** Commands whose answer did not come in time (a kill, a restart, a dropped webhook delivery). */
    noReply: 0,
    slowDown: 0,
    /** Bursts of 30 messages from the flooder, and the answers (not slow-down lines) they got. */
    floods: 0,
    floodAnswers: 0,
    floodSlowDowns: 0,
    /** How long the answers that came took (ms): median and slowest. */
    replyMs: { p50: 0, max: 0 },
  };
  const replyTimes: number[] = [];
  let floodChat: number | null = null;
  let floodFrom = 0;
  const topups: BotTopups = { test: [], approved: [], rejected: [] };
  const testTopup = new Map<number, number>();
  const bump = (m: Record<string, number>, k: string) => {
    m[k] = (m[k] ?? 0) + 1;
  };

  /** Sends text and waits (bounded) for the bot's first new message in the chat that `match`es. */
  async function ask(p: Person, text: string, match: (m: SimMessage) => boolean, timeoutMs = 15_000) {
    const before = sim.botMessages(p.user.id).length;
    const sent = Date.now();
    await sim.sendText(p.user, text);
    try {
      const m = await sim.waitFor(
        () =>
          sim
            .botMessages(p.user.id)
            .slice(before)
            .find((x) => !isAlert(x) && (match(x) || Boolean(x.text?.startsWith('Too many messages')))),
        timeoutMs,
      );
      replyTimes.push(Date.now() - sent);
      if (m.text?.startsWith('Too many messages')) {
        stats.slowDown += 1;
        return null;
      }
      return m;
    } catch {
      stats.noReply += 1;
      return null;
    }
  }

  /** Sets the person's mode; true only when the bot said so. */
  async function setMode(p: Person, mode: 'live' | 'test') {
    const m = await ask(p, `/mode ${mode}`, (x) =>
      Boolean(x.text?.startsWith(`[${mode}]`) && x.text.includes('The bot now acts in')),
    );
    return m !== null;
  }

  /** The words after the player: caller codes (new, or ones the API clients send), packs= or uc=. */
  function redeemArgs(p: Person): string {
    const r = rand();
    if (r < 0.45) {
      const codes = new Set<string>();
      for (let n = 1 + int(3); codes.size < n; ) {
        const shared = p.customer.callerCodes;
        if (shared.length > 0 && chance(0.4)) {
          codes.add(pick(shared));
          continue;
        }
        const roll = rand();
        const code = deps.newCallerCode(
          roll < 0.08 ? '-XX' : roll < 0.12 ? `-FAIL-${pick(deps.categories)}` : `-${pick(deps.categories)}`,
        );
        // The API clients of this customer may send it too, later or at the same time.
        shared.push(code);
        codes.add(code);
      }
      return [...codes].join(' ');
    }
    if (r < 0.8) {
      const packs = new Map<string, number>();
      for (let i = 1 + int(2); i > 0; i--) packs.set(pick(deps.categories), 1 + int(2));
      return `packs=${[...packs].map(([c, n]) => `${c}x${n}`).join(',')}`;
    }
    return `uc=${pick(deps.ucTargets)}`;
  }

  /** A confirmation's buttons, while it shows them. */
  const keyboardOf = (x: SimMessage) =>
    (x.reply_markup as { inline_keyboard?: { text: string; callback_data: string }[][] } | undefined)
      ?.inline_keyboard?.[0];
  const handled = new Set<string>();
  const unhandled = (x: SimMessage) =>
    !handled.has(`${x.chat_id}/${x.message_id}`) &&
    keyboardOf(x) !== undefined &&
    Boolean(x.text?.includes('Redeem this?'));

  async function manualRedeem(p: Person) {
    const shown = await p.turn(() => askAndPress(p));
    if (!shown) return;
    try {
      await sim.waitFor(
        () => /Redeem (started|finished|interrupted)|^\[live\]\n[a-z_]+: /.test(shown.text ?? ''),
        15_000,
      );
      if (/Redeem started|Redeem finished|Redeem interrupted/.test(shown.text ?? '')) stats.startedSeen += 1;
    } catch {
      stats.noReply += 1;
    }
  }

  /** Asks for a redeem and answers its confirmation; the confirmation when Redeem was pressed. */
  async function askAndPress(p: Person): Promise<SimMessage | null> {
    // A confirmation that came after its /redeem was given up on is answered first.
    let shown = sim.botMessages(p.user.id).find(unhandled) ?? null;
    if (!shown) {
      stats.redeemsAsked += 1;
      const player = chance(0.05) ? `000${100000 + int(899999)}` : `5${100000000 + int(899999999)}`;
      shown = await ask(
        p,
        `/redeem ${player} ${redeemArgs(p)}`,
        (x) => unhandled(x) || /^[a-z_]+: /.test(x.text ?? ''),
        25_000,
      );
    }
    if (!shown) return null;
    handled.add(`${shown.chat_id}/${shown.message_id}`);
    const buttons = keyboardOf(shown);
    if (!buttons) {
      bump(stats.refused, /^([a-z_]+):/.exec(shown.text ?? '')?.[1] ?? 'other');
      return null;
    }
    stats.confirmations += 1;
    const redeem = buttons.find((b) => b.text === 'Redeem')!.callback_data;
    const cancel = buttons.find((b) => b.text === 'Cancel')!.callback_data;
    // Test mode redeems in the sandbox, which the upstream's record cannot vouch for.
    if (!shown.text?.startsWith('[live]')) {
      stats.notLive += 1;
      await sim.press(p.user, shown, cancel);
      return null;
    }
    const r = rand();
    if (r < 0.08) {
      stats.leftUnpressed += 1;
      return null;
    }
    if (r < 0.22) {
      stats.cancelled += 1;
      await sim.press(p.user, shown, cancel);
      // Now and then Redeem after Cancel (a second device): runs nothing.
      if (chance(0.3)) await sim.press(p.user, shown, redeem, { stale: true });
      return null;
    }
    stats.pressedRedeem += 1;
    await sim.press(p.user, shown, redeem);
    if (chance(0.25)) {
      // Pressed again at once (a double tap), or Cancel right after: runs nothing more.
      stats.pressedTwice += 1;
      await sim.press(p.user, shown, chance(0.7) ? redeem : cancel, { stale: true });
    }
    return shown;
  }

  async function topupTest(p: Person) {
    // A unique amount per customer (1.01, 1.02, …): the ledger entry names its command.
    const k = (testTopup.get(p.customer.customerId) ?? 0) + 1;
    testTopup.set(p.customer.customerId, k);
    const micros = 1_000_000 + k * 10_000;
    stats.testTopupsSent += 1;
    const entry = { customerId: p.customer.customerId, micros, confirmed: false };
    topups.test.push(entry);
    const m = await ask(p, `/topup ${(micros / 1_000_000).toFixed(2)}`, (x) =>
      Boolean(x.text?.includes('Test wallet topped up') || /Top-up request tpr_\w+ made/.test(x.text ?? '')),
    );
    if (m?.text?.includes('Test wallet topped up')) {
      entry.confirmed = true;
      stats.testTopupsConfirmed += 1;
    } else if (m) stats.liveRequestsSeen += 1; // the mode was live after all: a request, decided below
  }

  async function topupLive(p: Person) {
    stats.liveRequestsSent += 1;
    const m = await ask(p, `/topup ${2 + int(40)}.${String(int(100)).padStart(2, '0')}`, (x) =>
      Boolean(x.text?.includes('Test wallet topped up') || /Top-up request tpr_\w+ made/.test(x.text ?? '')),
    );
    if (m && /Top-up request tpr_\w+ made/.test(m.text ?? '')) stats.liveRequestsSeen += 1;
  }

  /**
   * One person, two hands until `until`: manual redeems one after another (a confirmation shown
   * in test mode is cancelled), and between them the wallet: test top-ups (in test mode for one
   * or two, then back to live; never while a redeem is being asked), live top-up requests, and
   * reads. Updates of one chat may so be in flight together, as when a person types on while the
   * bot is busy.
   */
  async function act(p: Person, until: number) {
    const redeems = async () => {
      while (Date.now() < until) {
        try {
          await manualRedeem(p);
        } catch {
          // The stand-in refused a press (a message the bot deleted): nothing to do.
        }
        await sleep(200 + int(600));
      }
    };
    const wallet = async () => {
      let live = true; // a new link acts in live mode
      while (Date.now() < until) {
        await sleep(300 + int(900));
        if (!live) {
          live = await p.turn(() => setMode(p, 'live'));
          continue;
        }
        const r = rand();
        if (r < 0.35) {
          live = await p.turn(async () => {
            if (await setMode(p, 'test')) for (let i = 1 + int(2); i > 0; i--) await topupTest(p);
            return setMode(p, 'live');
          });
        } else if (r < 0.8) await topupLive(p);
        else {
          const [cmd, mark] = pick([
            ['/wallet', 'balance_usd'],
            ['/stock', 'total_available'],
            ['/account', 'customer:'],
          ] as const);
          await ask(p, cmd, (x) => Boolean(x.text?.includes(mark)));
        }
      }
    };
    await Promise.all([redeems(), wallet()]);
  }

  /** Sends an admin call; the status, or 0 on a network error (a killed server). */
  async function admin(method: string, path: string, body?: unknown): Promise<number> {
    try {
      const res = await fetch(`${deps.server().adminUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${TEST_ADMIN_TOKEN}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(20_000),
      });
      await res.arrayBuffer();
      return res.status;
    } catch {
      return 0;
    }
  }

  /** The operator decides pending live requests: approve (sometimes twice, sometimes both at once) or reject. */
  async function decidePending() {
    const { requests } = await adminHttp<{ requests: { id: string }[] }>(
      deps.server(),
      'GET',
      '/admin/v1/topup-requests?state=pending',
    );
    for (const { id } of requests) {
      if (chance(0.7)) {
        const path = `/admin/v1/topup-requests/${id}/approve`;
        const twice = chance(0.35);
        const statuses = twice
          ? await Promise.all([admin('POST', path, {}), admin('POST', path, {})])
          : [await admin('POST', path, {})];
        stats.approveCalls += statuses.length;
        if (twice) stats.approvedTwice += 1;
        if (statuses.includes(200)) topups.approved.push(id);
        // Sent again later, once more: credits nothing more.
        if (chance(0.2) && (await admin('POST', path, {})) === 200) topups.approved.push(id);
      } else {
        stats.rejectCalls += 1;
        if (
          (await admin('POST', `/admin/v1/topup-requests/${id}/reject`, { reason: 'soak: not paid' })) === 200
        )
          topups.rejected.push(id);
      }
    }
  }

  return {
    stats,
    topups,
    /** Links a new owner to the customer through a link the operator issued. */
    async link(customer: ChatCustomer, user: SimUser) {
      const { token } = await adminHttp<{ token: string }>(
        deps.server(),
        'POST',
        `/admin/v1/customers/${customer.customerId}/bot-links`,
        { role: 'owner' },
      );
      const p = { user, customer, turn: turns() };
      const m = await ask(p, `/start ${token}`, (x) => Boolean(x.text?.startsWith('Linked to')), 20_000);
      if (!m) throw new Error(`soak: linking ${user.username} failed`);
      people.push(p);
    },
    /**
     * A careless person: bursts of 30 /stock at once, at least 12 s apart (each its own window
     * of the 20-a-person limit), until `until`; their answers are counted at the end (flooded()).
     */
    async flood(customer: ChatCustomer, user: SimUser, until: number) {
      const { token } = await adminHttp<{ token: string }>(
        deps.server(),
        'POST',
        `/admin/v1/customers/${customer.customerId}/bot-links`,
        { role: 'staff' },
      );
      const p = { user, customer, turn: turns() };
      if (!(await ask(p, `/start ${token}`, (x) => Boolean(x.text?.startsWith('Linked to')), 20_000)))
        throw new Error(`soak: linking ${user.username} failed`);
      floodChat = user.id;
      floodFrom = sim.botMessages(user.id).length;
      while (Date.now() + 12_000 < until) {
        await sleep(500 + int(3000));
        stats.floods += 1;
        for (let i = 0; i < 30; i++) await sim.sendText(user, '/stock').catch(() => undefined);
        await sleep(12_000);
      }
    },
    /** The flooder's answers, counted once the chat is quiet. */
    flooded() {
      if (floodChat === null) return;
      const texts = sim
        .botMessages(floodChat)
        .slice(floodFrom)
        .map((m) => m.text ?? '');
      stats.floodAnswers = texts.filter((t) => t.includes('total_available')).length;
      stats.floodSlowDowns = texts.filter((t) => t.startsWith('Too many messages')).length;
    },
    /** Every linked person acts until `until`. */
    run: (until: number) => Promise.all(people.map((p) => act(p, until))),
    /** The operator's top-up desk until `until` (and once more when called after it). */
    async operate(until: number) {
      do {
        await sleep(1500 + int(2000));
        try {
          await decidePending();
        } catch {
          // the server is being killed or restarted
        }
      } while (Date.now() < until);
    },
    /** Each chat, message by message (shortened), for a failed run's report. */
    transcript(): string {
      return people
        .map((p) =>
          sim
            .messages(p.user.id)
            .map((m) => {
              const line = (t: string) => t.replace(/\n/g, ' | ').slice(0, 160);
              const before = m.edits.map((t) => `${line(t)}  ==>  `).join('');
              return `${m.from_bot ? 'bot' : 'who'} #${m.message_id}: ${before}${line(m.text ?? m.caption ?? '')}`;
            })
            .join('\n'),
        )
        .join('\n----\n');
    },
    /** The ends the chat was told, by kind, one per job (read once the work has drained). */
    tallyEnds() {
      const seen = new Map<string, string>();
      for (const p of people)
        for (const m of sim.botMessages(p.user.id)) {
          const e = END.exec(m.text ?? '');
          if (e) seen.set(e[2]!, e[1]!.split(' ')[0]!);
        }
      const sorted = [...replyTimes].sort((a, b) => a - b);
      stats.replyMs = { p50: sorted[sorted.length >> 1] ?? 0, max: sorted.at(-1) ?? 0 };
      stats.ends = {};
      for (const kind of seen.values()) bump(stats.ends, kind);
      return seen;
    },
  };
}
