// Types for the one module of the `pg` client used outside its public API (its package exports
// `./lib/*`; @types/pg does not describe it): src/db/wire-values.ts maps parameters with it.
declare module 'pg/lib/utils.js' {
  /** A JavaScript value as the text `pg` sends for it (null and Buffers pass through). */
  export function prepareValue(value: unknown): string | Buffer | null;
  const utils: { prepareValue: typeof prepareValue };
  export default utils;
}
