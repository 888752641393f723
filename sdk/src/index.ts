// @redeem-gateway/sdk: the TypeScript client of the Redeem Gateway API.
export type { Call, CallOptions } from './call.js';
export {
  type ClientOptions,
  RedeemGateway,
  type RedeemOptions,
  type RetryInfo,
  type WaitOptions,
} from './client.js';
export { isRetryable, JobInterruptedError, RedeemGatewayError } from './errors.js';
export { EventsApi, StatementsApi } from './reconcile.js';
export type * from './reconcile-types.js';
export type * from './types.js';
export {
  sign,
  type VerifyOptions,
  verify,
  WebhookVerificationError,
  type WebhookVerificationReason,
  webhooks,
} from './webhooks.js';
