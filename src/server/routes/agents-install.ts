import type { Hono } from 'hono';
import { InstallAgentsRequest, maskUrlPasswords, type AgentVersionInfo } from '../../protocol/index.js';
import type { AgentVersionRow } from '../../store/types.js';
import { requireAdmin, type AppEnv } from '../auth.js';
import { AgentInstallError, readAgentRepository } from '../agents-install.js';
import type { ServerContext } from '../context.js';
import { apiError, readBody } from '../http-util.js';
import { takesQuery } from '../query-rule.js';
import { iso } from '../views.js';

function info(r: AgentVersionRow, current: boolean): AgentVersionInfo {
  return { name: r.name, version: r.version, source: r.source, ref: r.ref, commit: r.commit, installedAt: iso(r.installedAt), current };
}

/**
 * `POST /api/agents/install` (admin; body {@link InstallAgentsRequest}) → 201
 * `{ installed: AgentVersionInfo[] }`: fetches the repository (git clone at `ref`, or a plain
 * folder), checks every definition, then stores a new version of each agent in one
 * transaction. 422 `invalid_agent` (message names the file and the field) when any definition
 * or script is bad, or a file it reads is absolute or leads (`..`, symlink) out of the
 * repository; 422 `fetch_failed` when the source cannot be fetched; 409 `agent_exists` when an
 * agent would shadow a built-in folder agent of the same name and `replace` is not true.
 * Nothing is stored on any error. An error message shows a source URL's password as `***`.
 *
 * `GET /api/agents/versions[?name=]` → `{ versions: AgentVersionInfo[] }`, every installed
 * version (by name, oldest first).
 */
export function mountAgentsInstall(app: Hono<AppEnv>, ctx: ServerContext): void {
  app.post('/api/agents/install', requireAdmin(), async (c) => {
    const body = await readBody(c, InstallAgentsRequest);
    if (!body.ok) return body.response;
    let repo;
    try {
      repo = await readAgentRepository(body.value.source, body.value.ref ?? null);
    } catch (err) {
      if (!(err instanceof AgentInstallError)) throw err;
      const code = /^(git |source: |ref: )/.test(err.message) ? 'fetch_failed' : 'invalid_agent';
      // The source URL's password (https://user:token@host/...) never goes back in the message.
      return apiError(c, 422, code, `agent repository refused as a whole: ${maskUrlPasswords(err.message)}`, code === 'invalid_agent' ? err.message.split(':')[0] : undefined);
    }
    // Shadowing a built-in folder agent must be asked for (`replace: true`), never silent.
    await ctx.agents.refresh();
    const shadowed = body.value.replace === true ? [] : repo.agents.map((a) => a.name).filter((n) => ctx.agents.wouldShadowFolderAgent(n));
    if (shadowed.length > 0) {
      return apiError(c, 409, 'agent_exists', `agent repository refused as a whole: name: ${shadowed.join(', ')} would replace the built-in agent of the same name; install with replace: true (CLI --replace) to do so`, 'name');
    }
    const rows = await ctx.store.installAgentVersions(repo.from, repo.agents, ctx.now());
    await ctx.agents.refresh();
    ctx.log.info('agents installed', { replace: body.value.replace === true, source: repo.from.source, commit: repo.from.commit, agents: rows.map((r) => `${r.name}@${r.version}`).join(',') });
    return c.json({ installed: rows.map((r) => info(r, ctx.agents.get(r.name)?.version === r.version)) }, 201);
  });

  app.get('/api/agents/versions', takesQuery('name'), async (c) => {
    const name = c.req.query('name');
    await ctx.agents.refresh();
    const rows = ctx.agents.installedVersions().map((a) => a.row).filter((r) => name === undefined || r.name === name);
    rows.sort((a, b) => a.name.localeCompare(b.name) || a.seq - b.seq);
    return c.json({ versions: rows.map((r) => info(r, ctx.agents.get(r.name)?.version === r.version)) });
  });
}
