// The service's closed vocabularies, each one list: the TypeScript types are derived from them
// here, the OpenAPI document's enums (openapi/schemas.ts), the statements' columns
// (billing/statement-csv.ts) and the usage counts take the same lists, and the SDK's and the
// console's copies are checked against them (test/core/vocabulary.test.ts). A leaf: it imports nothing.

/** A key's, a customer's account's and a job's mode. */
export const MODES = ['live', 'test'] as const;
export type Mode = (typeof MODES)[number];

/** What the upstream answered for one code (docs/reference/redeem.md#dispositions): the per-code status. */
export const CODE_STATUSES = ['activated', 'code_used', 'invalid_code', 'bad_player', 'failed'] as const;
export type ActivationStatus = (typeof CODE_STATUSES)[number];

/** What became of one code (docs/reference/redeem.md#dispositions, the disposition table: redeem/outcomes.ts). */
export const DISPOSITIONS = ['consumed', 'deleted', 'kept', 'returned', 'quarantined'] as const;
export type Disposition = (typeof DISPOSITIONS)[number];

/** A job's life (jobs/states.ts). */
export const JOB_STATUSES = ['queued', 'running', 'completed', 'failed', 'interrupted'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

/** A webhook event's state in the event log (webhooks/event-log.ts derives it from its attempts). */
export const EVENT_STATES = ['pending', 'delivered', 'failed'] as const;
export type EventState = (typeof EVENT_STATES)[number];

/** The webhook events of a job. */
export const JOB_EVENTS = ['redeem.completed', 'redeem.failed'] as const;
export type JobEvent = (typeof JOB_EVENTS)[number];
