/**
 * Job trees end to end on real parts (issue 6): a control plane (SQLite), a runner with 4
 * slots, the real Claude Code CLI against the scripted model, `flotilla mcp` (built CLI) as its
 * MCP server. Agents are written here (scripts in the gateway's format):
 * - `fan4` starts four `fan-child` jobs with start_job and waits with wait_jobs;
 * - `tree-top` starts two `tree-mid`, each starts one `sleeper` (test/fixtures) and waits.
 * Scenarios: the tree budget runs out while the four children call (spend never above the
 * limit, children pause, a top-up resumes them to success); cancelling the root cancels every
 * descendant and their processes are gone; a tree at its job-count limit gets a tool error.
 *
 * Budget figures: a Claude Code call's worst case here is ≈ 0.5–0.6 USD (⌈request bytes / 3⌉
 * tokens × 6 µ$ + 32,000 max_tokens × 15 µ$, gateway/budget.ts), each scripted turn costs
 * about 0.02 USD (the whole tree ≈ 0.24 USD); with a 0.70 USD tree only one call fits in
 * flight at a time, so with four children calling at once some are refused and pause.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../src/store/open.js';
import { startServer } from '../src/server/server.js';
import { createRegistrationToken } from '../src/server/auth.js';
import { startRunner } from '../src/runner/runner.js';
import { FlotillaClient } from '../src/client/client.js';
import type { TreeLimits } from '../src/protocol/index.js';
import { AGENTS_DIRS, allEvents, groupAlive, tempDir, waitFor } from './helpers.js';

const MCP_TOOLS = '[mcp__flotilla__start_job, mcp__flotilla__wait_jobs, mcp__flotilla__job_status, mcp__flotilla__cancel_job]';
const AGENTS: Record<string, { yaml: string; script: string }> = {
  fan4: {
    yaml: `name: fan4\nharness: claude-code\nallowedTools: ${MCP_TOOLS}\nholds: none\nlimits: { maxTurns: 10 }\ninputSchema: { type: object }\n`,
    script: [
      'turns:',
      '  - usage: { input_tokens: 5, output_tokens: 200, cache_read_input_tokens: 0, cache_creation_input_tokens: 5000 }',
      '    content:',
      '      - text: "Starting four children."',
      ...[1, 2, 3, 4].map((n) => `      - tool_use: { name: mcp__flotilla__start_job, input: { agent: fan-child, input: { n: ${n} } } }`),
      '  - usage: { input_tokens: 5, output_tokens: 20, cache_read_input_tokens: 5000, cache_creation_input_tokens: 800 }',
      '    content:',
      '      - tool_use: { name: mcp__flotilla__wait_jobs, input: { timeout_seconds: 600 } }',
      '  - usage: { input_tokens: 5, output_tokens: 30, cache_read_input_tokens: 5800, cache_creation_input_tokens: 900 }',
      '    content:',
      '      - text: "fan4: all four children have ended."',
    ].join('\n'),
  },
  'fan-child': {
    yaml: 'name: fan-child\nharness: claude-code\nallowedTools: [Bash]\nlimits: { maxTurns: 10 }\ninputSchema: { type: object, properties: { n: { type: integer } } }\n',
    script: [
      'turns:',
      ...[1, 2, 3].flatMap((k) => [
        `  - usage: { input_tokens: 5, output_tokens: 40, cache_read_input_tokens: ${k === 1 ? 0 : 4000}, cache_creation_input_tokens: 4000 }`,
        '    content:',
        `      - tool_use: { name: Bash, input: { command: "echo child {{input.n}} step ${k}" } }`,
      ]),
      '  - usage: { input_tokens: 5, output_tokens: 20, cache_read_input_tokens: 8000, cache_creation_input_tokens: 100 }',
      '    content:',
      '      - text: "child {{input.n}} done."',
    ].join('\n'),
  },
  'tree-top': {
    yaml: `name: tree-top\nharness: claude-code\nallowedTools: ${MCP_TOOLS}\nholds: none\ninputSchema: { type: object }\n`,
    script: [
      'turns:',
      '  - usage: { input_tokens: 5, output_tokens: 50, cache_read_input_tokens: 0, cache_creation_input_tokens: 100 }',
      '    content:',
      '      - tool_use: { name: mcp__flotilla__start_job, input: { agent: tree-mid, input: {} } }',
      '      - tool_use: { name: mcp__flotilla__start_job, input: { agent: tree-mid, input: {} } }',
      '  - usage: { input_tokens: 5, output_tokens: 20, cache_read_input_tokens: 100, cache_creation_input_tokens: 100 }',
      '    content:',
      '      - tool_use: { name: mcp__flotilla__wait_jobs, input: { timeout_seconds: 900 } }',
      '  - usage: { input_tokens: 5, output_tokens: 20, cache_read_input_tokens: 200, cache_creation_input_tokens: 0 }',
      '    content:',
      '      - text: "top done."',
    ].join('\n'),
  },
  'tree-mid': {
    yaml: `name: tree-mid\nharness: claude-code\nallowedTools: ${MCP_TOOLS}\nholds: none\ninputSchema: { type: object }\n`,
    script: [
      'turns:',
      '  - usage: { input_tokens: 5, output_tokens: 50, cache_read_input_tokens: 0, cache_creation_input_tokens: 100 }',
      '    content:',
      '      - tool_use: { name: mcp__flotilla__start_job, input: { agent: sleeper, input: { seconds: 300 } } }',
      '  - usage: { input_tokens: 5, output_tokens: 20, cache_read_input_tokens: 100, cache_creation_input_tokens: 100 }',
      '    content:',
      '      - tool_use: { name: mcp__flotilla__wait_jobs, input: { timeout_seconds: 900 } }',
      '  - usage: { input_tokens: 5, output_tokens: 20, cache_read_input_tokens: 200, cache_creation_input_tokens: 0 }',
      '    content:',
      '      - text: "mid done."',
    ].join('\n'),
  },
};

const TERMINAL = ['succeeded', 'failed', 'cancelled', 'lost'];

describe('job trees with the real Claude Code', () => {
  const dir = tempDir('flotilla-tree-e2e-');
  const agentsDir = join(dir.path, 'agents');
  for (const [name, a] of Object.entries(AGENTS)) {
    mkdirSync(join(agentsDir, name), { recursive: true });
    writeFileSync(join(agentsDir, name, 'agent.yaml'), a.yaml);
    writeFileSync(join(agentsDir, name, 'prompt.md'), `Run ${name}.`);
    writeFileSync(join(agentsDir, name, 'script.yaml'), a.script);
  }
  const cleanups: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
    dir.cleanup();
  });

  /** A control plane with the tree limits, and one runner with 4 slots. */
  async function plane(name: string, treeLimits?: TreeLimits) {
    const dataDir = join(dir.path, name);
    const store = await openStore({ dataDir });
    const { loadGatewayConfig } = await import('../src/gateway/config.js');
    const server = await startServer({ store, dataDir, port: 0, agentsDirs: [...AGENTS_DIRS, agentsDir], gateway: loadGatewayConfig({ ...process.env, ANTHROPIC_API_KEY: '' }), ...(treeLimits ? { treeLimits } : {}) });
    const runner = await startRunner({ serverUrl: server.url, registrationToken: await createRegistrationToken(store, {}, 3_600_000, Date.now()), workDir: join(dataDir, 'runner'), name: `${name}-runner`, capacity: 4, graceMs: 3000 });
    cleanups.push(async () => {
      await runner.stop();
      await server.close();
      await store.close();
    });
    return { store, client: new FlotillaClient({ url: server.url, token: server.adminToken! }) };
  }

  it('tree budget runs out while four children call: spend ≤ limit, they pause, a top-up resumes them to success', async () => {
    const { store, client } = await plane('budget');
    const root = await client.createJob({ agent: 'fan4', input: {}, budgetUsd: 0.7 });
    const limit = 700_000;
    let maxSeen = 0;
    const paused = await waitFor(
      'a child to pause for budget and nothing to be running',
      async () => {
        const b = await client.getBudget(root.id);
        maxSeen = Math.max(maxSeen, b.budget.spentMicros + b.budget.reservedMicros);
        const tree = await client.getJobTree(root.id);
        const kids = tree.tree.children;
        if (kids.some((k) => TERMINAL.includes(k.status) && k.status !== 'succeeded')) throw new Error(`a child ended ${JSON.stringify(kids.map((k) => [k.id, k.status, k.endReason]))}`);
        const p = kids.filter((k) => k.status === 'paused');
        const busy = kids.some((k) => ['queued', 'assigned', 'running'].includes(k.status));
        return kids.length === 4 && p.length > 0 && !busy ? p : null;
      },
      180_000,
      100,
    );
    expect(paused.every((k) => k.endReason === 'budget')).toBe(true);
    const before = await client.getBudget(root.id);
    expect(before.budget.limitMicros).toBe(limit);
    expect(before.budget.spentMicros).toBeLessThanOrEqual(limit);
    expect(maxSeen).toBeLessThanOrEqual(limit);
    // The refused calls are in the ledger as refused, never charged.
    const spentByCalls = (await client.getJobTree(root.id)).total.costMicros;
    expect(spentByCalls).toBe(before.budget.spentMicros);

    const topped = await client.topUpBudget(root.id, 10);
    for (const k of paused) expect(topped.resumed).toContain(k.id);
    const done = await waitFor('the tree to finish', async () => {
      const j = await client.getJob(root.id);
      return TERMINAL.includes(j.status) ? j : null;
    }, 240_000, 250);
    const tree = await client.getJobTree(root.id);
    expect([done.status, tree.tree.children.map((k) => k.status)]).toEqual(['succeeded', ['succeeded', 'succeeded', 'succeeded', 'succeeded']]);
    for (const k of paused) {
      const evs = await allEvents(store, k.id);
      expect(evs.some((e) => e.type === 'status' && e.data.status === 'queued' && /budget topped up/.test(e.data.message ?? ''))).toBe(true);
    }
    const after = await client.getBudget(root.id);
    expect(after.budget.spentMicros).toBe(tree.total.costMicros);
    expect(after.budget.spentMicros).toBeLessThanOrEqual(after.budget.limitMicros);
  }, 480_000);

  it('cancelling the root cancels children and grandchildren; their processes are gone', async () => {
    const { store, client } = await plane('cancel', { maxDepth: 2, maxJobs: 5 });
    const root = await client.createJob({ agent: 'tree-top', input: {}, budgetUsd: 5 });
    // Wait for both sleepers (depth 2) to be in their `sleep`.
    const sleepers = await waitFor('both grandchildren to sleep', async () => {
      const all = await store.listTreeJobs(root.id);
      const rows = all.filter((j) => j.agent === 'sleeper');
      let ready = rows.length === 2;
      for (const s of rows) if (!(await allEvents(store, s.id)).some((e) => e.type === 'tool.call')) ready = false;
      if (ready) return rows;
      // Not yet: say where each job of the tree is, so a timeout shows what it waited on.
      const where = await Promise.all(all.map(async (j) => {
        const evs = await allEvents(store, j.id);
        const last = evs.slice(-3).map((e) => `${e.type}${e.type === 'status' ? `:${e.data.status}${e.data.message ? ` (${e.data.message})` : ''}` : ''}`);
        return `#${j.id} ${j.agent} ${j.status}${j.endReason ? `/${j.endReason}` : ''} [${last.join(', ')}]`;
      }));
      throw new Error(where.join('; '));
    }, 180_000, 200);
    const jobs = await store.listTreeJobs(root.id);
    expect(jobs.map((j) => j.agent).sort()).toEqual(['sleeper', 'sleeper', 'tree-mid', 'tree-mid', 'tree-top']);
    const pids: number[] = [];
    for (const j of jobs) {
      const ev = (await allEvents(store, j.id)).find((e) => e.type === 'harness.started');
      if (ev?.type === 'harness.started') pids.push(ev.data.pid);
    }
    expect(pids.length).toBe(5);
    await new Promise((r) => setTimeout(r, 300));
    expect(pids.every(groupAlive)).toBe(true);
    expect(sleepers.length).toBe(2);

    await client.cancelJob(root.id);
    const ended = await waitFor('every job of the tree to read cancelled', async () => {
      const rows = await store.listTreeJobs(root.id);
      return rows.every((j) => j.status === 'cancelled') ? rows : null;
    }, 60_000, 200);
    expect(ended.map((j) => j.status)).toEqual(['cancelled', 'cancelled', 'cancelled', 'cancelled', 'cancelled']);
    expect(pids.filter(groupAlive)).toEqual([]);
  }, 300_000);

  it('a tree at its job-count limit: start_job is a tool error naming the limit', async () => {
    const { store, client } = await plane('limits', { maxDepth: 3, maxJobs: 3 });
    const root = await client.createJob({ agent: 'fan4', input: {}, budgetUsd: 5 });
    const done = await waitFor('fan4 to finish', async () => {
      const j = await client.getJob(root.id);
      return TERMINAL.includes(j.status) ? j : null;
    }, 240_000, 250);
    expect(done.status).toBe('succeeded');
    const results = (await allEvents(store, root.id)).filter((e) => e.type === 'tool.result' && e.data.isError);
    const texts = results.map((e) => (e.type === 'tool.result' ? e.data.output : ''));
    expect(texts.length).toBe(2);
    for (const t of texts) expect(t).toContain(`may not start a child: job count limit: the tree already holds 3 jobs and may hold at most 3 (FLOTILLA_TREE_MAX_JOBS)`);
    expect((await store.listTreeJobs(root.id)).length).toBe(3);
  }, 300_000);
});
