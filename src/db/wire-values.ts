// A statement's parameters as they cross to the embedded database's thread: the `pg` client's own
// value mapping (its exported lib path), so a parameter becomes the same text on both databases
// (dates with their offset, objects as JSON, arrays as PostgreSQL arrays) and the server and the
// embedded database cannot read one value two ways. Mapped on the calling thread: strings cross
// threads cheaply, and PGlite's own code stays out of the serving thread.
import pgUtils from 'pg/lib/utils.js';

/** A parameter as it crosses to PGlite: the text `pg` would send, bytes, or null. */
export type WireValue = string | Uint8Array | null;

export function toWire(params: readonly unknown[]): WireValue[] {
  return params.map((v) => pgUtils.prepareValue(v));
}
