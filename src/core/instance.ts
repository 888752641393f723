// This process's identity for job leases. A lease not renewed for LEASE_MS means its process
// stopped (docs/reference/jobs.md#interrupted-jobs: a 30 s lease plus a sweep).
import { randomBase62 } from './ids.ts';

export const INSTANCE_ID = `proc_${randomBase62(16)}`;
export const LEASE_MS = 30_000;
/** How often the sweeper looks for jobs whose lease ran out. */
export const SWEEP_MS = 10_000;
