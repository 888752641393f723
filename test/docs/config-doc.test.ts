// docs/running/configuration.md is generated from the configuration schema (npm run docs:config):
// it lists every variable the schema reads, and the committed page is what the script prints now.
import { readFileSync } from 'node:fs';
import { expect, test } from 'vitest';
import { CONFIG_DOC_PATH, renderConfigDoc, schemaVariables } from '../../scripts/config-doc.ts';

test('the committed configuration page is the generated one (run npm run docs:config)', () => {
  expect(readFileSync(CONFIG_DOC_PATH, 'utf8')).toBe(renderConfigDoc());
});

test('every variable the schema reads has a row, with its default', () => {
  const page = readFileSync(CONFIG_DOC_PATH, 'utf8');
  const variables = schemaVariables();
  expect(variables.length).toBeGreaterThan(50);
  for (const name of ['DATABASE_URL', 'CODE_ENCRYPTION_KEY', 'SANDBOX_SLOW_MS', 'BOT_TOKEN', 'LOG_LEVEL'])
    expect(variables).toContain(name);
  for (const name of variables) expect(page, name).toMatch(new RegExp(`^\\| \`${name}\` \\| [^|]+ \\|`, 'm'));
  expect(page).toContain('| `WEBHOOK_RETRY_DELAYS` | `10,60,300` |');
});
