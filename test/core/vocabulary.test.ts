// One list per vocabulary (core/vocabulary.ts; the audit actions in core/operators/audit.ts): the
// types, the OpenAPI enums and the admin API's filters take the list itself; the copies that
// cannot import it (the SDK, which ships alone, and the console's browser scripts) are checked
// here to say the same words in the same order.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';
import { ERROR_CODE_OF } from '../../src/core/redeem/outcomes.ts';
import {
  CODE_STATUSES,
  DISPOSITIONS,
  EVENT_STATES,
  JOB_EVENTS,
  JOB_STATUSES,
  MODES,
} from '../../src/core/vocabulary.ts';
import { openApiJson } from '../../src/openapi/document.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** The quoted words of the first match of `pattern` (group 1) in a file. */
function wordsAt(path: string, pattern: RegExp): string[] {
  const m = read(path).match(pattern);
  if (!m) throw new Error(`${path}: ${pattern} not found`);
  return [...m[1]!.matchAll(/'([^']*)'/g)].map((w) => w[1]!);
}

test("the SDK's unions are core's lists", () => {
  const union = (name: string) => new RegExp(`export type ${name} = (?:Open<)?([^;]*);`);
  expect(wordsAt('sdk/src/types.ts', union('Mode'))).toEqual([...MODES]);
  expect(wordsAt('sdk/src/types.ts', union('KnownCodeStatus'))).toEqual([...CODE_STATUSES]);
  expect(wordsAt('sdk/src/types.ts', /export type CodeErrorCode = Open<([^>]*)>/)).toEqual(
    CODE_STATUSES.map((s) => ERROR_CODE_OF[s]),
  );
  expect(wordsAt('sdk/src/types.ts', union('Disposition'))).toEqual([...DISPOSITIONS]);
  expect(wordsAt('sdk/src/types.ts', union('JobStatus'))).toEqual([...JOB_STATUSES]);
  expect(wordsAt('sdk/src/reconcile-types.ts', /event: Open<([^>]*)>/)).toEqual([...JOB_EVENTS]);
  expect(wordsAt('sdk/src/reconcile-types.ts', /export type EventState = Open<([^>]*)>/)).toEqual([
    ...EVENT_STATES,
  ]);
});

test("the console's copies are core's lists", () => {
  // The audit actions and event states are no copies: the server writes them into
  // /console/assets/vocabulary.js from core's lists (routes/admin/console.ts).
  expect(read('src/console/assets/page-audit.js')).toContain(
    "import { AUDIT_ACTIONS as ACTIONS } from './vocabulary.js';",
  );
  expect(read('src/console/assets/page-customer-reconcile.js')).toContain(
    "import { EVENT_STATES } from './vocabulary.js';",
  );
  expect(read('src/routes/admin/console.ts')).toMatch(
    /JSON\.stringify\(AUDIT_ACTIONS\)[\s\S]*JSON\.stringify\(EVENT_STATES\)/,
  );
  expect(wordsAt('src/console/assets/page-jobs.js', /select\('status', \[([^\]]*)\]/)).toEqual([
    ...JOB_STATUSES,
  ]);
  expect(wordsAt('src/console/assets/page-jobs.js', /select\('mode', \[([^\]]*)\]/)).toEqual([...MODES]);
  expect(
    wordsAt('src/console/assets/charts.js', /OUTCOME_SERIES = \[([\s\S]*?)\n\];/).filter(
      (w) => !w.startsWith('#'),
    ),
  ).toEqual([...CODE_STATUSES]);
});

test("the OpenAPI document's enums are core's lists", () => {
  const doc = openApiJson();
  for (const list of [
    CODE_STATUSES,
    DISPOSITIONS,
    JOB_STATUSES,
    EVENT_STATES,
    CODE_STATUSES.map((s) => ERROR_CODE_OF[s]),
  ])
    expect(doc).toContain(JSON.stringify({ enum: [...list] }).slice(1, -1));
});
