import type { FlotillaClient } from '../../client/index.js';
import type { Runner } from '../../protocol/index.js';
import { cutEcho } from '../../protocol/echo.js';
import { ApiError } from '../../client/errors.js';
import { CliError } from '../options.js';

/**
 * Resolves a RUNNER argument (an id, or an exact runner name) to a runner id. Names are unique
 * among runners that are not revoked (core/runner-names.ts): when revoked runners share the
 * name with one that is not, that one is meant.
 * @throws ApiError 404 `not_found` when no runner has that name (as the API's for an unknown
 *   id: exit 1, `--json` with its status); CliError when several do (then give the id); the
 *   name repeated cut to 100 characters.
 */
export async function resolveRunner(client: FlotillaClient, text: string): Promise<number> {
  const t = text.trim();
  if (/^[0-9]{1,15}$/.test(t) && Number(t) > 0) return Number(t);
  const all = await client.listRunners();
  const named = all.filter((r) => r.name === t);
  if (named.length === 1) return named[0]!.id;
  const live = named.filter((r) => r.status !== 'revoked');
  if (live.length === 1) return live[0]!.id;
  // as the API's own 404 for an unknown id (status in --json, as `jobs show 999` has it: fresh-tester finding)
  if (named.length === 0) throw new ApiError(404, 'not_found', `no runner named ${JSON.stringify(cutEcho(t))} (flotilla runners lists them)`);
  throw new CliError(`${named.length} runners are named ${JSON.stringify(t)} (ids ${named.map((r) => r.id).join(', ')}); give the id`);
}

/**
 * Runner names by id, for showing runners as `flotilla runners` does (by name) where the API
 * gives an id (a job's `runnerId`). One request; an empty map when `ids` is empty or the list
 * cannot be read (then ids are shown).
 */
export async function runnerNames(client: FlotillaClient, ids: ReadonlyArray<number | null>): Promise<Map<number, string>> {
  if (!ids.some((id) => id !== null)) return new Map();
  const all = await client.listRunners().catch(() => []);
  return new Map(all.map((r) => [r.id, r.name]));
}

/**
 * `2/3`: parallel-job slots held (`slotsUsed`; jobs holding `none` take none) of capacity, and
 * ` +1 kept` for the slots idle tasks keep (`keptSlots`): `0/2 +1 kept` is one slot free.
 */
export function slotsText(r: Runner): string {
  const kept = r.keptSlots?.length ?? 0;
  return `${r.slotsUsed ?? r.runningJobs.length}/${r.capacity}${kept ? ` +${kept} kept` : ''}`;
}

/** `; 1 kept by idle task 5 until 2026-12-07T05:00:00.000Z` for `runners show`, else ''. */
export function keptText(r: Runner): string {
  const kept = r.keptSlots ?? [];
  if (kept.length === 0) return '';
  return `; ${kept.length} kept by idle ${kept.length === 1 ? 'task' : 'tasks'} ${kept.map((k) => `${k.taskId} until ${k.until}`).join(', ')} (tasks suspend ID frees one)`;
}

/** ` until 2026-11-30T14:00:00Z (reason)` for a held runner, else ''. */
export function holdText(r: Runner): string {
  return r.hold ? `until ${r.hold.until} (${r.hold.reason})` : '';
}
