// Runs once per `npm test`: on PGlite, builds a migrated template database that every test file
// copies (a new PGlite database costs seconds; a copy of a prepared one is quick). On
// PostgreSQL (DATABASE_URL), migrates the database once; tests create their own customers.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openPglite, openPostgres } from '../../src/db/database.ts';
import { migrate } from '../../src/db/migrate.ts';

export default async function setup({ provide }: { provide: (key: string, value: unknown) => void }) {
  if (process.env.DATABASE_URL) {
    const db = await openPostgres(process.env.DATABASE_URL);
    try {
      await migrate(db);
    } finally {
      await db.close();
    }
    provide('pgliteTemplate', '');
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'rg-template-'));
  const db = await openPglite(dir);
  await migrate(db);
  await db.close();
  provide('pgliteTemplate', dir);
  return () => rmSync(dir, { recursive: true, force: true });
}

declare module 'vitest' {
  export interface ProvidedContext {
    pgliteTemplate: string;
  }
}
