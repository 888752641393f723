// A setup file: on PostgreSQL, clones the migrated template into a database for this test file
// and points DATABASE_URL at it, so everything in the file (in-process apps and spawned server
// processes alike) works on its own database. Dropped when the file ends.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, inject } from 'vitest';
import { onEveryNode } from './citus-nodes.ts';
import { databaseUrl } from './database-url.ts';

const base = process.env.DATABASE_URL;
// PgBouncer in front (DATABASE_POOL_MODE=transaction): made on PostgreSQL itself, used through both.
const direct = process.env.DATABASE_DIRECT_URL;
const template = inject('pgTemplate');
// On a Citus coordinator: the template cloned on every node under one name.
const workers = inject('citusWorkers');
if (base && template) {
  const name = `${template}_f${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: direct ?? base });
  await admin.connect();
  // Two files cloning at the same moment can find the template busy: try again shortly.
  for (let attempt = 0; ; attempt++) {
    try {
      if (workers.length)
        await onEveryNode(direct ?? base, workers, `create database ${name} template ${template}`);
      else await admin.query(`create database ${name} template ${template}`);
      break;
    } catch (err) {
      if (attempt >= 50 || !/being accessed by other users/.test(String((err as Error).message))) throw err;
      await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
    }
  }
  process.env.DATABASE_URL = databaseUrl(base, name);
  if (direct) process.env.DATABASE_DIRECT_URL = databaseUrl(direct, name);
  afterAll(async () => {
    process.env.DATABASE_URL = base;
    if (direct) process.env.DATABASE_DIRECT_URL = direct;
    if (workers.length)
      await onEveryNode(direct ?? base, workers, `drop database if exists ${name} with (force)`);
    else await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  });
}
