/**
 * The fan-out of issue 6 end to end on real parts: a control plane (SQLite), four runners
 * (two `toolchain=node`, two `toolchain=python`, capacity 1 each), the real Claude Code CLI
 * against the scripted model, `flotilla mcp` (the built CLI) as the MCP server Claude Code
 * starts, real git. The migrator starts six repo-upgrader children through `start_job`, waits
 * with `wait_jobs`; each child upgrades a repository made here, on a runner with the matching
 * toolchain, and commits once its tests pass.
 * Expected costs are worked out from the scripts' token counts and data/prices.json
 * (claude-sonnet-4-5: input 3, output 15, cache write 3.75, cache read 0.30 USD per million).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import type { JobTreeNode } from '../src/protocol/index.js';
import { startRunner } from '../src/runner/runner.js';
import { ROOT, startPlane, tempDir, waitFor, type Plane } from './helpers.js';

interface ScriptTurn {
  usage: { input_tokens: number; output_tokens: number; cache_read_input_tokens?: number; cache_creation_input_tokens?: number };
}
/** Cost of a script's turns in µ$ at claude-sonnet-4-5's prices (USD/MTok = µ$/token), each call rounded as the gateway does (nearest µ$ of the exact nano-dollars). */
function scriptCostMicros(agent: string): { calls: number; micros: number } {
  const turns = (parseYaml(readFileSync(join(ROOT, 'agents', agent, 'script.yaml'), 'utf8')) as { turns: ScriptTurn[] }).turns;
  let micros = 0;
  for (const t of turns) {
    const nanos = t.usage.input_tokens * 3000 + t.usage.output_tokens * 15000 + (t.usage.cache_read_input_tokens ?? 0) * 300 + (t.usage.cache_creation_input_tokens ?? 0) * 3750;
    micros += Math.round(nanos / 1000);
  }
  return { calls: turns.length, micros };
}

const NODE_TEST = `const pkg = require('./package.json');
const v = pkg.dependencies['left-pad'];
if (v === '2.0.0') { console.log('1 passed'); } else { console.log('0 passed, 1 failed: left-pad is ' + v + ', want 2.0.0'); process.exit(1); }
`;
const PY_TEST = `import sys
reqs = open('requirements.txt').read()
if 'requests==2.0.0' in reqs:
    print('1 passed')
else:
    print('0 passed, 1 failed: want requests==2.0.0'); sys.exit(1)
`;

describe('migrator fan-out over six repositories on four runners', () => {
  const dir = tempDir('flotilla-fanout-');
  const repos = join(dir.path, 'repos');
  let plane: Plane;
  const runners: Awaited<ReturnType<typeof startRunner>>[] = [];
  const entries = [
    ...['api', 'web', 'cli'].map((n) => ({ repo: `node-${n}`, toolchain: 'node', test_command: 'node test.js', upgrade_command: `sed -i 's/"left-pad": "1.0.0"/"left-pad": "2.0.0"/' package.json` })),
    ...['ml', 'etl', 'bot'].map((n) => ({ repo: `py-${n}`, toolchain: 'python', test_command: 'python3 test_app.py', upgrade_command: "sed -i 's/requests==1.0.0/requests==2.0.0/' requirements.txt" })),
  ];

  beforeAll(async () => {
    for (const e of entries) {
      const d = join(repos, e.repo);
      mkdirSync(d, { recursive: true });
      if (e.toolchain === 'node') {
        writeFileSync(join(d, 'package.json'), JSON.stringify({ name: e.repo, version: '1.0.0', dependencies: { 'left-pad': '1.0.0' }, scripts: { test: 'node test.js' } }, null, 2) + '\n');
        writeFileSync(join(d, 'test.js'), NODE_TEST);
      } else {
        writeFileSync(join(d, 'requirements.txt'), 'requests==1.0.0\n');
        writeFileSync(join(d, 'test_app.py'), PY_TEST);
      }
    }
    plane = await startPlane({ dataDir: join(dir.path, 'data') });
    for (const [i, toolchain] of ['node', 'node', 'python', 'python'].entries()) {
      runners.push(
        await startRunner({
          serverUrl: plane.url,
          registrationToken: await plane.registrationToken(),
          workDir: join(dir.path, `runner-${i}`),
          name: `${toolchain}-${i}`,
          labels: { toolchain },
          capacity: 1,
          repoBaseDir: repos,
          graceMs: 3000,
        }),
      );
    }
  }, 60_000);
  afterAll(async () => {
    for (const r of runners) await r.stop();
    await plane?.close();
    dir.cleanup();
  });

  it('six children on matching runners, at the same time, six branches with passing tests, results and costs collected', async () => {
    const job = await plane.client.createJob({ agent: 'migrator', input: { repos: entries }, budgetUsd: 5 });
    const done = await waitFor(
      'the migrator to finish',
      async () => {
        const j = await plane.client.getJob(job.id);
        return ['succeeded', 'failed', 'cancelled', 'lost'].includes(j.status) ? j : null;
      },
      300_000,
      500,
    );
    const tree = await plane.client.getJobTree(job.id);
    expect({ status: done.status, error: done.error }).toEqual({ status: 'succeeded', error: null });
    const kids = tree.tree.children;
    expect(kids.map((k) => [k.agent, k.status])).toEqual(entries.map(() => ['repo-upgrader', 'succeeded']));
    // Each child on a runner of its toolchain.
    const runnerLabel = new Map(runners.map((r, i) => [r.runnerId, ['node', 'node', 'python', 'python'][i]]));
    const jobs = await Promise.all(kids.map((k) => plane.client.getJob(k.id)));
    for (const j of jobs) {
      const entry = entries.find((e) => e.repo === j.input.repo)!;
      expect(j.selector).toEqual({ toolchain: entry.toolchain });
      expect(runnerLabel.get(j.runnerId!)).toBe(entry.toolchain);
    }
    expect(new Set(jobs.map((j) => j.input.repo))).toEqual(new Set(entries.map((e) => e.repo)));
    // At least two children ran at the same time.
    const spans = jobs.map((j) => [Date.parse(j.startedAt!), Date.parse(j.finishedAt!)] as const);
    const overlapping = spans.some((a, i) => spans.some((b, k) => k !== i && a[0] < b[1] && b[0] < a[1]));
    expect(overlapping).toBe(true);
    // Six branches with a commit whose tests pass.
    for (const j of jobs) {
      expect(j.result?.branch).toBe(`flotilla/job-${j.id}`);
      expect(j.result?.commit).toMatch(/^[0-9a-f]{7,40}$/);
      const r = runners.find((x) => x.runnerId === j.runnerId)!;
      const ws = join(dir.path, `runner-${runners.indexOf(r)}`, 'workspaces', `job-${j.id}`);
      expect(execFileSync('git', ['-C', ws, 'rev-parse', '--abbrev-ref', 'HEAD'], { encoding: 'utf8' }).trim()).toBe(`flotilla/job-${j.id}`);
      expect(execFileSync('git', ['-C', ws, 'status', '--porcelain'], { encoding: 'utf8' })).toBe('');
      const entry = entries.find((e) => e.repo === j.input.repo)!;
      const [cmd, ...args] = entry.test_command.split(' ');
      expect(execFileSync(cmd!, args, { cwd: ws, encoding: 'utf8' })).toContain('1 passed');
    }
    // The parent's result lists all six with their costs.
    const child = scriptCostMicros('repo-upgrader');
    const parent = scriptCostMicros('migrator');
    const listed = (done.result as { children?: { id: number; label?: string; status: string; branch?: string; costMicros: number }[] }).children ?? [];
    expect(listed.map((c) => [c.id, c.label, c.status, c.branch, c.costMicros])).toEqual(jobs.map((j) => [j.id, j.input.repo, 'succeeded', `flotilla/job-${j.id}`, child.micros]));
    // The tree's cost is the sum of its calls: 1 migrator + 6 children, from the scripts.
    const nodes: JobTreeNode[] = [tree.tree, ...kids];
    expect(nodes.map((n) => n.usage.modelCalls)).toEqual([parent.calls, ...kids.map(() => child.calls)]);
    expect(tree.total.costMicros).toBe(parent.micros + 6 * child.micros);
    expect(tree.total.costMicros).toBe(nodes.reduce((s, n) => s + n.usage.costMicros, 0));
    const budget = await plane.client.getBudget(job.id);
    expect(budget.budget.spentMicros).toBe(tree.total.costMicros);
    // The parent's transcript shows a child.started per child.
    const started = (await plane.store.listEvents(job.id, 0, 1000)).filter((e) => e.type === 'child.started');
    expect(started.map((e) => (e.data as { jobId: number }).jobId)).toEqual(kids.map((k) => k.id));
  }, 360_000);
});
