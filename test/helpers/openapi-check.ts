// The drift guard: every public API response a test receives is checked against the OpenAPI
// document (helpers/openapi-match.ts); a mismatch is recorded and fails the test that received
// it (afterEach below).
import { afterEach } from 'vitest';
import { checkResponse, type ObservedResponse } from './openapi-match.ts';

export {
  checkResponse,
  checkWebhookPayload,
  type JsonSchema,
  type ObservedResponse,
} from './openapi-match.ts';

const violations: string[] = [];

/** Checks a response now and records any mismatch; the current test fails after it ends. */
export function recordResponse(r: ObservedResponse): void {
  const problems = checkResponse(r);
  if (problems.length) {
    violations.push(
      `${r.method} ${r.url} → ${r.status}: ${problems.join('; ')}\n  body: ${r.body.slice(0, 600)}`,
    );
  }
}

afterEach(() => {
  if (violations.length === 0) return;
  const found = violations.splice(0);
  throw new Error(`responses that do not match the OpenAPI document:\n${found.join('\n')}`);
});
