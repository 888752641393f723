// The mixed load of bench:citus (--parts=mixed; docs/running/citus.md#two-phase-commits): 100
// customers on a coordinator with two workers, each with a test key and a webhook to an HTTPS
// receiver on 127.0.0.1, doing for a while what merchants do at once (sync and async redeems,
// reads of the account, a job, the events and the stock, statements, redeliveries), with the
// coordinator's two-phase-commit recovery paused. What it counts is the rule of
// docs/running/citus.md#two-phase-commits (a request for one customer commits on its worker alone):
// how many two-phase commits the load added to pg_dist_transaction (sessions only, as the
// two-phase-commit test counts them), apart from the operator's set-up before it. With a chat,
// each customer's owner is linked through the bot and does what owners do in the chat at the same
// time (citus-chat.ts).
import { randomBytes } from 'node:crypto';
import type { Database } from '../src/db/database.ts';
import type { BotApiSim } from '../src/dev/bot-api-sim.ts';
import { chatClient, linkOwners } from './citus-chat.ts';
import { api } from './requests.ts';
import type { WebhookReceiver } from './webhook-receiver.ts';

/**
 * The two-phase commits sessions recorded on the coordinator (the gid names the session's pid;
 * Citus's own background workers are left out), as the two-phase-commit test counts them.
 * With recovery paused the count only grows.
 */
export async function twoPhaseRecords(coordinator: Database): Promise<number> {
  const r = await coordinator.query<{ n: number }>(
    `select count(*)::int as n from pg_dist_transaction
      where split_part(gid, '_', 3)::int not in (
              select pid from pg_stat_activity where backend_type <> 'client backend')`,
  );
  return r.rows[0]!.n;
}

export interface MixedResult {
  customers: number;
  seconds: number;
  clients: number;
  /** Answers by what was asked and its status ("sync redeem 200"). */
  answers: Map<string, number>;
  asyncAccepted: number;
  redeliveriesAccepted: number;
  webhooksReceived: number;
  /** Two-phase commits recorded by the webhook registrations (the set-up's last step). */
  setUpRecords: number;
  /** Owners linked through the bot (0 without a chat), and the two-phase commits of linking them. */
  ownersLinked: number;
  linkRecords: number;
  /** Conversations in flight during the load (0: no chat). */
  chatClients: number;
  /** Two-phase commits recorded from the load's start to the last webhook and a sweep after. */
  loadRecords: number;
}

type Kind =
  | 'sync redeem'
  | 'async redeem'
  | 'GET /v1/me'
  | 'GET /v1/jobs/{id}'
  | 'GET /v1/events'
  | 'redeliver'
  | 'GET /v1/statements'
  | 'GET /v1/stock';

/** Each kind's share of the load, in percent. */
const MIX: [Kind, number][] = [
  ['sync redeem', 35],
  ['async redeem', 15],
  ['GET /v1/me', 20],
  ['GET /v1/jobs/{id}', 10],
  ['GET /v1/events', 5],
  ['redeliver', 5],
  ['GET /v1/statements', 5],
  ['GET /v1/stock', 5],
];

function pick(): Kind {
  let n = Math.random() * 100;
  for (const [kind, share] of MIX) {
    n -= share;
    if (n < 0) return kind;
  }
  return MIX[0]![0];
}

/** A request with a key; a redeem gets an Idempotency-Key of its own. */
function call(base: string, key: string, method: string, path: string, body?: unknown) {
  const headers: Record<string, string> =
    path === '/v1/redeem' ? { 'idempotency-key': `mixed-${randomBytes(8).toString('hex')}` } : {};
  return api(`${base}${path}`, key, method, body, headers);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Registers a webhook for each key's customer, then runs the mixed load for `seconds` with
 * `clients` requests in flight, waits for every accepted job's and redelivery's webhook (at most
 * two minutes) and for a sweep after it, and counts the two-phase commits of each step.
 */
export async function runMixed(o: {
  publicUrl: string;
  keys: string[];
  receiver: WebhookReceiver;
  coordinator: Database;
  seconds: number;
  clients: number;
  /** The owners' chat beside the API load: the Bot API stand-in the gateway's bot talks to. */
  chat?: { sim: BotApiSim; adminUrl: string; adminToken: string; customerIds: number[]; clients: number };
}): Promise<MixedResult> {
  const before = await twoPhaseRecords(o.coordinator);
  for (const key of o.keys) {
    const r = await call(o.publicUrl, key, 'POST', '/v1/webhook', { url: o.receiver.url });
    if (r.status !== 200) throw new Error(`POST /v1/webhook: ${r.status} ${JSON.stringify(r.body)}`);
  }
  const atLink = await twoPhaseRecords(o.coordinator);
  const owners = o.chat ? await linkOwners(o.chat) : [];
  const atLoad = await twoPhaseRecords(o.coordinator);
  const answers = new Map<string, number>();
  const jobs = new Map<string, string[]>();
  let asyncAccepted = 0;
  let redeliveriesAccepted = 0;
  let sequence = 0;
  const deadline = Date.now() + o.seconds * 1000;
  const client = async () => {
    while (Date.now() < deadline) {
      const key = o.keys[Math.floor(Math.random() * o.keys.length)]!;
      const own = jobs.get(key) ?? [];
      const jobId = own[Math.floor(Math.random() * own.length)];
      let kind = pick();
      if ((kind === 'GET /v1/jobs/{id}' || kind === 'redeliver') && !jobId) kind = 'GET /v1/me';
      const code = `MIXED${Date.now()}${sequence++}-60`;
      let status: number;
      switch (kind) {
        case 'sync redeem':
        case 'async redeem': {
          const r = await call(o.publicUrl, key, 'POST', '/v1/redeem', {
            player_id: '5123456789',
            codes: [code],
            async: kind === 'async redeem',
          });
          status = r.status;
          if (status === 202) {
            asyncAccepted++;
            jobs.set(key, [...own, String(r.body['job_id'])]);
          }
          break;
        }
        case 'GET /v1/jobs/{id}':
          status = (await call(o.publicUrl, key, 'GET', `/v1/jobs/${jobId}`)).status;
          break;
        case 'redeliver': {
          const events = await call(o.publicUrl, key, 'GET', `/v1/events?job_id=${jobId}`);
          const eventId = (events.body['events'] as { id: string }[] | undefined)?.[0]?.id;
          if (!eventId) {
            // The job's event is not written yet: counted as the read it was.
            kind = 'GET /v1/events';
            status = events.status;
            break;
          }
          status = (await call(o.publicUrl, key, 'POST', `/v1/events/${eventId}/redeliver`)).status;
          if (status === 202) redeliveriesAccepted++;
          break;
        }
        default:
          status = (await call(o.publicUrl, key, 'GET', kind.slice(4))).status;
      }
      const label = `${kind} ${status}`;
      answers.set(label, (answers.get(label) ?? 0) + 1);
    }
  };
  const chats = Array.from({ length: o.chat?.clients ?? 0 }, () =>
    chatClient({ sim: o.chat!.sim, free: owners, deadline, answers }),
  );
  await Promise.all([...Array.from({ length: o.clients }, client), ...chats]);
  // Every accepted job's event and redelivery delivered, then a sweep (every 10 s) after it.
  const expected = asyncAccepted + redeliveriesAccepted;
  const waitUntil = Date.now() + 120_000;
  while (o.receiver.deliveries.length < expected && Date.now() < waitUntil) await sleep(250);
  await sleep(11_000);
  const after = await twoPhaseRecords(o.coordinator);
  return {
    customers: o.keys.length,
    seconds: o.seconds,
    clients: o.clients,
    answers,
    asyncAccepted,
    redeliveriesAccepted,
    webhooksReceived: o.receiver.deliveries.length,
    setUpRecords: atLink - before,
    ownersLinked: owners.length,
    linkRecords: atLoad - atLink,
    chatClients: o.chat?.clients ?? 0,
    loadRecords: after - atLoad,
  };
}

export function mixedReport(r: MixedResult): string[] {
  const total = [...r.answers.values()].reduce((a, b) => a + b, 0);
  return [
    `Mixed load: ${r.customers} customers on a coordinator with two workers, ${r.clients} requests in flight ` +
      (r.chatClients > 0 ? `and ${r.chatClients} owners' conversations in the chat ` : '') +
      `for ${r.seconds} s; two-phase-commit recovery paused`,
    '',
    '| asked | status | answers |',
    '|---|---|---|',
    ...[...r.answers]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([label, n]) => {
        const at = label.lastIndexOf(' ');
        return `| ${label.slice(0, at)} | ${label.slice(at + 1)} | ${n} |`;
      }),
    '',
    `${total} answers (${(total / r.seconds).toFixed(0)}/s); ${r.asyncAccepted} async jobs and ` +
      `${r.redeliveriesAccepted} redeliveries accepted, ${r.webhooksReceived} webhooks received`,
    `two-phase commits recorded: ${r.setUpRecords} by the webhook registrations, ` +
      (r.chatClients > 0 ? `${r.linkRecords} by linking ${r.ownersLinked} owners through the bot, ` : '') +
      `${r.loadRecords} by the load (from its start to its last webhook and a sweep after)`,
  ];
}
