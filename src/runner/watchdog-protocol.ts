import { z } from 'zod';

/**
 * What the runner tells its job watchdog (watchdog.ts → watchdog-process.ts), one JSON object
 * per line on the watchdog's stdin:
 * - `watch`: a job attempt runs in process group `pgid`; its processes carry the environment
 *   marker `FLOTILLA_RUN=<marker>` (proc-tree.ts), also those that left the group.
 * - `unwatch`: that group is gone (the runner reaped it).
 * - `renew`: the runner's lease on its jobs was renewed (lease.ts): unless renewed again, the
 *   watchdog starts stopping every watched job in `termInMs` (SIGTERM) and kills what is left
 *   at `killInMs` (SIGKILL), ms from when it reads the line.
 */
export const WatchdogCommand = z.union([
  z.object({ watch: z.number().int().gt(1), marker: z.string().min(1).max(200) }).strict(),
  z.object({ unwatch: z.number().int().gt(1) }).strict(),
  z.object({ renew: z.object({ termInMs: z.number().min(0), killInMs: z.number().min(0) }).strict() }).strict(),
]);
export type WatchdogCommand = z.infer<typeof WatchdogCommand>;

/**
 * What the watchdog reports back, one JSON object per line on its stdout: it stopped a job's
 * processes because the runner did not renew its lease in time (`silentMs`: ms since the last
 * renewal it read), or it could not parse a line.
 */
export const WatchdogReport = z.union([
  z.object({ stopped: z.number().int(), marker: z.string(), silentMs: z.number(), left: z.array(z.number().int()) }),
  z.object({ error: z.string() }),
]);
export type WatchdogReport = z.infer<typeof WatchdogReport>;
