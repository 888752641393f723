// The redeem as the job worker and recovery run it (jobs/runner.ts): handed to them by the
// process, so that jobs/ never imports redeem/.
import type { JobRunner } from '../jobs/runner.ts';
import { executeJob } from './run.ts';
import { settleStoppedJob } from './settle.ts';

export const redeemJobRunner: JobRunner = { execute: executeJob, settleStopped: settleStoppedJob };
