// What `npm start` prints once listening: where everything is, and the demo key when one was made.
import { join } from 'node:path';
import { DEMO_STOCK_PER_CATEGORY } from '../core/demo/seed.ts';
import type { Database } from '../db/database.ts';
import { ADMIN_TOKEN_FILE } from './secrets.ts';

export function announce(a: {
  publicUrl: string;
  adminUrl: string;
  demo: { customerId: number; key: string } | null;
  dataDir: string;
  tokenFromEnv: boolean;
  db: Database;
  /** The chat bot, when BOT_TOKEN turned it on. */
  bot: { username: string; updates: 'polling' | 'webhook' } | null;
}) {
  const lines = [
    '',
    `Redeem Gateway is running (${a.db.kind === 'pglite' ? `embedded database in ${a.dataDir}` : 'PostgreSQL'}).`,
    `  public API: ${a.publicUrl}`,
    `  admin API:  ${a.adminUrl} (token: ${a.tokenFromEnv ? 'ADMIN_TOKEN' : join(a.dataDir, ADMIN_TOKEN_FILE)})`,
    `  console:    ${a.adminUrl}/console (sign in with the admin token; metrics at ${a.adminUrl}/metrics)`,
    a.bot
      ? `  chat bot:   @${a.bot.username}, updates by ${a.bot.updates === 'webhook' ? `webhook at ${a.publicUrl}/bot/updates` : 'long polling'} (people are linked from the console or \`admin bot link\`)`
      : '  chat bot:   off (set BOT_TOKEN to turn it on; `npm run cli -- bot-sim` tries it without Telegram)',
  ];
  if (a.demo) {
    lines.push(
      '',
      `A demo customer (id ${a.demo.customerId}) was created with this test key, shown only now:`,
      `  ${a.demo.key}`,
      'Try it:',
      `  curl -s ${a.publicUrl}/v1/me -H 'Authorization: Bearer ${a.demo.key}'`,
      `  curl -s ${a.publicUrl}/v1/redeem -H 'Authorization: Bearer ${a.demo.key}' -H 'Idempotency-Key: demo-1' -H 'Content-Type: application/json' -d '{"player_id":"5123456789","codes":["DEMO-CODE-0001-60"]}'`,
      `It has ${DEMO_STOCK_PER_CATEGORY} test stock codes in each category: try {"packs":{"660":2}} or {"uc":385} instead of codes.`,
      `API reference: ${a.publicUrl}/docs (OpenAPI: ${a.publicUrl}/v1/openapi.json)`,
    );
  } else if (a.db.kind === 'pglite') {
    lines.push(
      '',
      'The demo key was printed when this database was created. A new one:',
      // The admin address and data directory this server uses, so the command reaches it as is.
      `  ADMIN_URL=${a.adminUrl} DATA_DIR=${a.dataDir} npm run cli -- admin keys create 1 --mode test`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n\n`);
}
