// Runs once per `npm test`. Every test file gets a database of its own, copied from a migrated
// template made here: on PGlite a data directory to copy (a new PGlite database costs seconds),
// on PostgreSQL (DATABASE_URL) a template database that each file clones with CREATE DATABASE.
// Own databases keep one file's job and webhook workers away from another file's rows.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { ensureBuilt } from '../../bin/build.js';
import { openPglite, openPostgres } from '../../src/db/database.ts';
import { migrate } from '../../src/db/migrate.ts';
import { migrateAndPlace } from '../../src/db/migrate-direct.ts';
import { citusWorkers, closeTemplate, makeCitusDatabase, onEveryNode } from './citus-nodes.ts';
import { databaseUrl } from './database-url.ts';

export { databaseUrl };

export default async function setup({ provide }: { provide: (key: string, value: unknown) => void }) {
  // Server processes run the compiled build (bin/redeem-gateway.js): built once here, before
  // the test files start them in parallel.
  ensureBuilt();
  // Behind PgBouncer (DATABASE_POOL_MODE=transaction) databases are made and dropped on
  // PostgreSQL itself: the pooler keeps server connections to a database open after use.
  const base = process.env.DATABASE_DIRECT_URL ?? process.env.DATABASE_URL;
  if (base) {
    const template = `rgtest_${process.pid}_${Date.now().toString(36)}`;
    const admin = new pg.Client({ connectionString: base });
    await admin.connect();
    // On a Citus coordinator the template is a database on every node, its tables distributed.
    const workers = await citusWorkers(admin);
    if (workers) await makeCitusDatabase(base, workers, template);
    else await admin.query(`create database ${template}`);
    const db = await openPostgres(databaseUrl(base, template), { poolMode: 'session' });
    try {
      await migrateAndPlace(db);
    } finally {
      await db.close();
    }
    if (workers) await closeTemplate(base, workers, template);
    provide('pgliteTemplate', '');
    provide('pgTemplate', template);
    provide('citusWorkers', workers ?? []);
    return async () => {
      if (workers) {
        // Every node's copies: the template and what a crashed run left behind.
        const left = await admin.query<{ datname: string }>(
          `select datname from pg_database where datname like $1`,
          [`${template}%`],
        );
        for (const { datname } of left.rows)
          await onEveryNode(base, workers, `drop database if exists ${datname} with (force)`);
        await admin.end();
        return;
      }
      // The template and any per-file database a crashed run left behind.
      const left = await admin.query<{ datname: string }>(
        `select datname from pg_database where datname like $1`,
        [`${template}%`],
      );
      for (const { datname } of left.rows)
        await admin.query(`drop database if exists ${datname} with (force)`);
      await admin.end();
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'rg-template-'));
  const db = await openPglite(dir);
  await migrate(db);
  await db.close();
  provide('pgliteTemplate', dir);
  provide('pgTemplate', '');
  provide('citusWorkers', []);
  return () => rmSync(dir, { recursive: true, force: true });
}

declare module 'vitest' {
  export interface ProvidedContext {
    pgliteTemplate: string;
    pgTemplate: string;
    /** The Citus workers when DATABASE_URL is a coordinator, else empty. */
    citusWorkers: { host: string; port: number }[];
  }
}
