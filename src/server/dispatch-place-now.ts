import type { Labels } from '../protocol/index.js';
import type { JobRow } from '../store/types.js';
import { slotsUsed, whyNotFits, workspaceKey } from '../core/capacity.js';
import { hashToken, newToken } from '../core/tokens.js';
import { selectorMatches } from '../core/labels.js';
import type { RunnerConnection } from './hub.js';
import { formatLabels } from './views.js';
import { limitsOf, openRunner } from './dispatch-assign.js';
import { groupByRunner } from './dispatch-match.js';
import type { DispatcherOptions, PlaceResult } from './dispatcher.js';

/** What {@link placeNow} needs: the dispatcher's options and its deliver step (the `assigned` event and `job.assign`). */
export interface PlaceNowDeps extends DispatcherOptions {
  deliver(conn: RunnerConnection, job: JobRow, token: string, force: boolean): Promise<'sent' | 'unreachable' | 'failed'>;
}

/**
 * `jobs start`: places queued job `jobId` now on a runner connected to this server whose
 * labels match (only `runnerId` when given). Without `force`: held runners are skipped and
 * the runner needs a free slot, else `over_capacity` (naming the matching runners and their
 * slots) or `on_hold`. With `force`: held runners count too and capacity is ignored (the
 * runner is told to run it anyway). Picks the runner with the most free slots, then lowest id.
 */
export async function placeNow(d: PlaceNowDeps, jobId: number, o: { runnerId?: number; force: boolean }): Promise<PlaceResult> {
  const { store, hub, now } = d;
  const job = await store.getJob(jobId);
  if (!job) return { ok: false, code: 'not_found', message: `no job ${jobId}` };
  if (job.status !== 'queued') return { ok: false, code: 'not_queued', message: `job ${jobId} is ${job.status}, not queued` };
  const pinnedId = job.pinnedRunnerId ?? null;
  if (pinnedId !== null) {
    // It resumes a session kept on one runner (run --resume): only there.
    if (o.runnerId !== undefined && o.runnerId !== pinnedId) {
      return { ok: false, code: 'no_runner', message: `job ${jobId} resumes a session kept on runner ${pinnedId}: it can only run there` };
    }
    const pinned = await store.getRunner(pinnedId);
    if (!pinned || pinned.revokedAt !== null) {
      return { ok: false, code: 'no_runner', message: `job ${jobId} resumes a session kept on runner ${pinned ? `${pinned.name} (${pinned.id})` : pinnedId}, which was revoked: it can never run` };
    }
    o = { ...o, runnerId: pinnedId };
  }
  if (o.runnerId !== undefined && !hub.connections().some((c) => c.runnerId === o.runnerId)) {
    // Only the replica a runner is connected to can hand it a job (the runner's socket is there).
    const r = await store.getRunner(o.runnerId);
    const message = !r
      ? `no runner ${o.runnerId}`
      : r.revokedAt !== null
        ? `runner ${r.name} (${r.id}) was revoked: it can never take a job`
        : hub.isUpdating(r.id)
        ? `runner ${r.name} (${r.id}) is updating itself: it takes no job until it is back on the new version`
        : r.connected && !r.offline
          ? `runner ${r.name} (${r.id}) is connected to another server replica: run jobs start against the server it is connected to`
          : `runner ${r.name} (${r.id}) is not connected`;
    // the code runners update gives for the same thing (routes/runners-update.ts)
    const elsewhere = r !== null && r.revokedAt === null && !hub.isUpdating(r.id) && r.connected && !r.offline;
    return { ok: false, code: elsewhere ? 'not_connected' : 'no_runner', message };
  }
  const conns = hub.connections().filter((c) => (o.runnerId === undefined || c.runnerId === o.runnerId) && selectorMatches(job.selector, c.labels));
  if (conns.length === 0) return { ok: false, code: 'no_runner', message: noMatchMessage(job.selector, o.runnerId === undefined ? undefined : hub.connections().find((c) => c.runnerId === o.runnerId)) };
  const [held, active] = await Promise.all([store.listHeldRunnerIds(now()), store.listActiveAssignments()]);
  const heldSet = new Set(held);
  const byRunner = groupByRunner(active);
  const holds = d.agents.get(job.agent)?.holds ?? 'workspace';
  const workspace = workspaceKey(job);
  const candidates = conns
    .filter((c) => o.force || !heldSet.has(c.runnerId))
    .map((c) => ({ ...openRunner(c, byRunner.get(c.runnerId) ?? []), c }))
    .map((x) => ({ ...x, why: whyNotFits(holds, workspace, x.active, limitsOf(x.c)) }))
    .filter((x) => o.force || x.why === null)
    .sort((a, b) => b.free - a.free || a.c.runnerId - b.c.runnerId);
  const pick = candidates[0];
  if (!pick) {
    const slots = conns
      .map((c) => {
        const mine = byRunner.get(c.runnerId) ?? [];
        const why = whyNotFits(holds, workspace, mine, limitsOf(c));
        return `${c.name} ${slotsUsed(mine, limitsOf(c))}/${c.capacity}${heldSet.has(c.runnerId) ? ' on hold' : ''}${why ? `: ${why}` : ''}`;
      })
      .join(', ');
    const allHeld = conns.every((c) => heldSet.has(c.runnerId));
    return allHeld
      ? { ok: false, code: 'on_hold', message: `every matching runner is on hold (${slots}); use --force to place it anyway` }
      : { ok: false, code: 'over_capacity', message: `placing it now would go past capacity (${slots}); use --force to place it anyway` };
  }
  const token = newToken('flj');
  const claimed = await store.claimJobById(jobId, { id: pick.c.runnerId, labels: pick.c.labels }, hashToken(token), now(), holds);
  if (!claimed) return { ok: false, code: 'not_queued', message: `job ${jobId} was taken meanwhile` };
  const sent = await d.deliver(pick.c, claimed, token, o.force && (pick.why !== null || heldSet.has(pick.c.runnerId)));
  if (sent !== 'sent') return { ok: false, code: 'no_runner', message: `could not hand job ${jobId} to runner ${pick.c.name}` };
  return { ok: true, job: claimed, runnerId: pick.c.runnerId, runnerName: pick.c.name };
}

/**
 * Why no runner connected here can take a job asking for the labels `selector`: the runner asked
 * for (`runner`) by name and id, with the labels it lacks (`runner r5 (id 5) does not have the
 * label pool=a the job asks for (it has pool=b)`), or, with no runner asked for, that none here
 * has them (or that none is connected here at all).
 */
export function noMatchMessage(selector: Labels, runner?: { runnerId: number; name: string; labels: Labels }): string {
  if (!runner) {
    const n = Object.keys(selector).length;
    return n === 0 ? 'no runner is connected to this server' : `no runner connected to this server has the label${n === 1 ? '' : 's'} ${formatLabels(selector)} the job asks for`;
  }
  const missing = Object.fromEntries(Object.entries(selector).filter(([k, v]) => runner.labels[k] !== v));
  const n = Object.keys(missing).length;
  const has = Object.fromEntries(Object.keys(missing).filter((k) => Object.hasOwn(runner.labels, k)).map((k) => [k, runner.labels[k]!]));
  const hasText = Object.keys(has).length ? ` (it has ${formatLabels(has)})` : '';
  return `runner ${runner.name} (id ${runner.runnerId}) does not have the label${n === 1 ? '' : 's'} ${formatLabels(missing)} the job asks for${hasText}`;
}
