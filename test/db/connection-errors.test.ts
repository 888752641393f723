// Which errors mean "the database is away" (503 unavailable, the connection dropped) and which are
// wrong statements (500), with the errors a Citus coordinator gave while one of its workers stopped
// and started again (test/db/citus-faults.test.ts; docs/running/citus.md#a-worker-that-stops).
// Their code and text are copied here as the coordinator sent them, so the rule is checked on
// every database, not only on a cluster.
import { expect, test } from 'vitest';
import { isConnectionError, isWorkerUnreachable } from '../../src/db/connection-errors.ts';

/** A database error as `pg` gives it: the server's SQLSTATE in `code`. */
const pgError = (code: string, message: string) =>
  Object.assign(new Error(message), { code, severity: 'ERROR' });

const workerAway: [string, Error][] = [
  [
    'a worker refusing connections (stopped)',
    pgError(
      '08006',
      'connection to the remote node postgres@127.0.0.1:9761 failed with the following error: Connection refused\n\tIs the server running on that host and accepting TCP/IP connections?',
    ),
  ],
  [
    'a worker shutting down',
    pgError(
      '08006',
      'connection to the remote node postgres@127.0.0.1:9761 failed with the following error: FATAL:  the database system is shutting down',
    ),
  ],
  [
    'a worker starting up',
    pgError(
      '08006',
      'connection to the remote node postgres@127.0.0.1:9761 failed with the following error: FATAL:  the database system is starting up',
    ),
  ],
  [
    "a coordinator's cached connection to a worker that restarted",
    pgError(
      '08006',
      'connection to the remote node postgres@127.0.0.1:9761 failed with the following error: server closed the connection unexpectedly',
    ),
  ],
  // The worker's own answer to a fast stop, passed on by the coordinator with its SQLSTATE.
  [
    'a statement running on a worker as it stopped',
    pgError('57P01', 'terminating connection due to administrator command'),
  ],
  // Not seen here (a stopped worker on this machine refuses at once): Citus's own wording for a
  // worker that does not answer within citus.node_connection_timeout, from its source.
  [
    "Citus's connection timeout to a worker",
    pgError('08006', 'could not establish any connections to the node 127.0.0.1:9761 after 30000 ms'),
  ],
];

test.for(workerAway)('%s is a connection error (503, retried)', ([, err]) => {
  expect(isConnectionError(err)).toBe(true);
});

const wrongStatements: [string, Error][] = [
  ['a statement Citus cannot plan', pgError('XX000', 'could not create distributed plan')],
  [
    'a join Citus cannot run',
    pgError(
      '0A000',
      'complex joins are only supported when all distributed tables are co-located and joined on their distribution columns',
    ),
  ],
  ['a unique violation', pgError('23505', 'duplicate key value violates unique constraint "jobs_pkey"')],
];

test.for(wrongStatements)('%s is not (500)', ([, err]) => {
  expect(isConnectionError(err)).toBe(false);
});

// Of those, the ones that say the coordinator is fine and one worker is not: the coordinator's
// connection is kept, and the claims skip that worker's customers (docs/running/citus.md#a-worker-that-stops).
test.for(workerAway)('%s: is it one worker that did not answer?', ([name, err]) => {
  expect(isWorkerUnreachable(err)).toBe(name !== 'a statement running on a worker as it stopped');
});

test("the coordinator's own connection lost is not a worker's", () => {
  expect(
    isWorkerUnreachable(
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9760'), { code: 'ECONNREFUSED' }),
    ),
  ).toBe(false);
  expect(isWorkerUnreachable(pgError('08006', 'connection failure'))).toBe(false);
  expect(isWorkerUnreachable(pgError('57P01', 'terminating connection due to administrator command'))).toBe(
    false,
  );
  for (const [, err] of wrongStatements) expect(isWorkerUnreachable(err)).toBe(false);
});
