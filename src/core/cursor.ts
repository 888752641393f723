// Keyset cursors of the paged lists (admin lists, the audit log, the event log): opaque to
// clients, base64url of the last row's sort key.

/** A cursor is opaque to clients: base64url of the last row's sort key. */
export function encodeCursor(parts: (string | number)[]): string {
  return Buffer.from(JSON.stringify(parts)).toString('base64url');
}

/** The parts of a cursor, or null when it is not one of ours. */
export function decodeCursor(cursor: string): unknown[] | null {
  if (!/^[A-Za-z0-9_-]{1,400}$/.test(cursor)) return null;
  try {
    const parts: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    return Array.isArray(parts) ? parts : null;
  } catch {
    return null;
  }
}
