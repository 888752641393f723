// PostgreSQL behind a connection pooler (docs/reference/running.md#postgresql-poolers-and-failover). PgBouncer in transaction mode hands each
// transaction (or lone statement) to whichever server connection is free, so nothing may outlive
// one transaction on a connection:
// - no named prepared statements (PgBouncer 1.18, Debian's, does not track them: the next
//   transaction finds "prepared statement does not exist" or another client's statement);
// - no session settings sent at connect (PgBouncer refuses statement_timeout and
//   idle_in_transaction_session_timeout as startup parameters): set them on the database role
//   or in PgBouncer's connect_query instead (README, operations);
// - LISTEN and the migrations' lock go to DATABASE_DIRECT_URL, PostgreSQL itself.
// application_name is one PgBouncer carries over to each server connection it hands out.
export type PoolMode = 'session' | 'transaction';

/**
 * DATABASE_POOL_MODE as the process was started with it. Read here as well as in the config so
 * that every handle of the process (tools, benchmarks and tests included) obeys it.
 */
export function poolModeFromEnv(env: NodeJS.ProcessEnv = process.env): PoolMode {
  return env.DATABASE_POOL_MODE === 'transaction' ? 'transaction' : 'session';
}

/** Where migrations and LISTEN go: PostgreSQL itself, never through a transaction pooler. */
export function directUrl(config: {
  DATABASE_URL?: string | undefined;
  DATABASE_DIRECT_URL?: string | undefined;
}): string | undefined {
  return config.DATABASE_DIRECT_URL ?? config.DATABASE_URL;
}
