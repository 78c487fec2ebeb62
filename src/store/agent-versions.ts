import { sql, type Selectable } from 'kysely';
import { num } from './codec.js';
import { assertInt, type StoreCtx } from './ctx.js';
import type { AgentVersionsTable } from './agent-versions-schema.js';
import type { AgentInstallSource, AgentVersionRow, NewAgentVersion } from './agent-versions-types.js';

/**
 * Installed agent versions (issue 6, migration 0011): an install stores a new version of each
 * of its agents in one transaction, so a refused or failed install leaves nothing behind.
 */

const NAME = /^[a-z][a-z0-9-]{0,62}$/;
const COMMIT = /^([0-9a-f]{40}|[0-9a-f]{64}|sha256:[0-9a-f]{64})$/;

function toRow(r: Selectable<AgentVersionsTable>): AgentVersionRow {
  return {
    id: num(r.id),
    name: r.name,
    seq: num(r.seq),
    version: r.version,
    source: r.source,
    ref: r.ref,
    commit: r.commit,
    // A text column on both engines (not jsonb): parsed here, the same way on both.
    definition: JSON.parse(r.definition) as unknown,
    script: r.script,
    installedAt: num(r.installed_at),
  };
}

/** `v<seq>-<first 12 hex of the commit>`. */
export function versionLabel(seq: number, commit: string): string {
  return `v${seq}-${commit.replace(/^sha256:/, '').slice(0, 12)}`;
}

function check(from: AgentInstallSource, agents: readonly NewAgentVersion[], now: number): void {
  assertInt('now', now, 0);
  if (typeof from.source !== 'string' || from.source.length === 0 || from.source.length > 2000) throw new Error('store: source must be a string of 1 to 2000 characters');
  if (from.ref !== null && (typeof from.ref !== 'string' || from.ref.length === 0 || from.ref.length > 200)) throw new Error('store: ref must be null or a string of 1 to 200 characters');
  if (typeof from.commit !== 'string' || !COMMIT.test(from.commit)) throw new Error(`store: commit must be 40 or 64 hex digits or sha256:<64 hex>, got ${JSON.stringify(from.commit)}`);
  if (agents.length === 0) throw new Error('store: agents must hold at least one agent');
  const seen = new Set<string>();
  agents.forEach((a, i) => {
    if (typeof a.name !== 'string' || !NAME.test(a.name)) throw new Error(`store: agents.${i}.name must be lowercase letters, digits and dashes, got ${JSON.stringify(a.name)}`);
    if (seen.has(a.name)) throw new Error(`store: agents.${i}.name ${a.name} appears twice in one install`);
    seen.add(a.name);
    if (a.definition === undefined || a.definition === null || typeof a.definition !== 'object') throw new Error(`store: agents.${i}.definition must be an object`);
    if (a.script !== null && typeof a.script !== 'string') throw new Error(`store: agents.${i}.script must be null or text`);
  });
}

/** See {@link AgentVersionStore.installAgentVersions}. */
export async function installAgentVersions(c: StoreCtx, from: AgentInstallSource, agents: readonly NewAgentVersion[], now: number): Promise<AgentVersionRow[]> {
  check(from, agents, now);
  return c.db.transaction().execute(async (trx) => {
    // Two installs at once on PostgreSQL: serialise them so seq numbers never collide.
    if (c.dialect === 'postgres') await sql`select pg_advisory_xact_lock(hashtext('flotilla.agent_versions'))`.execute(trx);
    const out: AgentVersionRow[] = [];
    for (const a of agents) {
      const top = await trx.selectFrom('agent_versions').select((eb) => eb.fn.max('seq').as('top')).where('name', '=', a.name).executeTakeFirst();
      const seq = (top?.top === null || top?.top === undefined ? 0 : num(top.top)) + 1;
      const row = await trx
        .insertInto('agent_versions')
        .values({
          name: a.name,
          seq,
          version: versionLabel(seq, from.commit),
          source: from.source,
          ref: from.ref,
          commit: from.commit,
          definition: c.codec.json(a.definition),
          script: a.script,
          installed_at: now,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      out.push(toRow(row));
    }
    return out;
  });
}

/** See {@link AgentVersionStore.listAgentVersions}. */
export async function listAgentVersions(c: StoreCtx, name?: string): Promise<AgentVersionRow[]> {
  let q = c.db.selectFrom('agent_versions').selectAll();
  if (name !== undefined) q = q.where('name', '=', name);
  const rows = await q.orderBy('name').orderBy('seq').execute();
  return rows.map((r) => toRow(r));
}
