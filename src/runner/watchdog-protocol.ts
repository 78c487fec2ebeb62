import { z } from 'zod';

/**
 * What the runner tells its job watchdog (watchdog.ts → watchdog-process.ts), one JSON object
 * per line on the watchdog's stdin:
 * - `watch`: a job attempt runs in process group `pgid`; its processes carry the environment
 *   marker `FLOTILLA_RUN=<marker>` (proc-tree.ts), also those that left the group.
 * - `unwatch`: that group is gone (the runner reaped it).
 * - `renew`: the runner's lease on its jobs was renewed (lease.ts): unless renewed again, the
 *   watchdog starts stopping every watched job `termInMs` after `at` (SIGTERM) and kills what is
 *   left `killInMs` after it (SIGKILL). `at` is when the runner wrote the line, on two clocks
 *   both processes share — the host's monotonic clock ({@link monotonicMs}) and the wall clock
 *   (epoch ms) — and a deadline has passed when it has on either (the monotonic clock does not
 *   count a host's suspend; the wall clock may be stepped). Deadlines are absolute: a watchdog
 *   that reads the line late (stopped, starved, just started) does not push them back.
 */
export const WatchdogCommand = z.union([
  z.object({ watch: z.number().int().gt(1), marker: z.string().min(1).max(200) }).strict(),
  z.object({ unwatch: z.number().int().gt(1) }).strict(),
  z.object({ renew: z.object({ at: z.object({ mono: z.number(), wall: z.number() }).strict(), termInMs: z.number().min(0), killInMs: z.number().min(0) }).strict() }).strict(),
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

/**
 * The host's monotonic clock in ms (CLOCK_MONOTONIC on Linux, through process.hrtime): the same
 * in every process of the host, unlike performance.now(), which counts from the process's start.
 */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint() / 1000n) / 1000;
}
