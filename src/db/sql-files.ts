// What the migration runner and the function files share: reading a SQL file as statements, and
// its checksum.
import { createHash } from 'node:crypto';

/** sha256 of a file's text, line endings made `\n` (a Windows checkout is the same text). */
export function checksum(sql: string): string {
  return createHash('sha256').update(sql.replace(/\r\n/g, '\n')).digest('hex');
}

/**
 * Splits a migration or function file on `;` at line ends, outside `$$`-quoted function bodies
 * (src/db/functions/ holds PL/pgSQL); comment lines outside bodies are dropped.
 */
export function splitStatements(sql: string): string[] {
  const statements: string[] = [];
  let current: string[] = [];
  let inBody = false;
  for (const line of sql.split('\n')) {
    if (!inBody && line.trim().startsWith('--')) continue;
    current.push(line);
    // Each `$$` opens or closes a body.
    if ((line.match(/\$\$/g)?.length ?? 0) % 2 === 1) inBody = !inBody;
    if (!inBody && /;\s*$/.test(line)) {
      statements.push(current.join('\n').replace(/;\s*$/, '').trim());
      current = [];
    }
  }
  statements.push(current.join('\n').trim());
  return statements.filter(Boolean);
}
