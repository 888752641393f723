// The project's own fuzzer (test/fuzz/fuzz.test.ts runs it briefly, bench/fuzz.ts for long; see
// bench/README.md "Fuzzing"): requests generated from the public OpenAPI document, the admin app's
// route table and the shapes of Telegram updates, with valid, boundary and hostile values and every
// kind of credential; every answer is checked. This file only gathers what its users import:
//
//   types.ts            FuzzCase, Finding, FuzzWorld
//   random.ts           the seeded generator (the same seed gives the same requests)
//   values.ts           hostile pools, URL values, the OpenAPI schema sampler
//   credentials.ts      keys, admin tokens, the bot's secret; who is a stranger
//   bot-updates.ts      Telegram update shapes for POST /bot/updates
//   public-requests.ts  the OpenAPI-driven public requests
//   admin-requests.ts   the admin requests and the admin app's route table
//   generator.ts        the seeded request stream
//   checks.ts           what is wrong with an answer
//   runner.ts           sending, checking, totals, findings
//   world.ts            the customers, keys and operators the requests refer to
export { adminRouteTable } from './admin-requests.ts';
export { checkAnswer } from './checks.ts';
export { caseGenerator } from './generator.ts';
export { type Random, seeded } from './random.ts';
export {
  describeFinding,
  emptyTotals,
  type FuzzTotals,
  type RunOptions,
  runFuzz,
  templateOf,
} from './runner.ts';
export type { Finding, FuzzCase, FuzzWorld, Listener } from './types.ts';
export { HOSTILE_STRINGS } from './values.ts';
export { prepareWorld } from './world.ts';
