/**
 * The main job end to end, on real parts: a control plane (SQLite, then PostgreSQL), one
 * runner, the real Claude Code CLI, the scripted model. The test-fixer agent must really fix
 * examples/calc: tests pass afterwards, a commit sits on flotilla/job-<id>, the events show
 * the script's tool calls in order, and the recorded tokens equal the script's sums.
 */
import { describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { parse as parseYaml } from 'yaml';
import { ROOT, planeWithRunner, waitFor, allEvents } from './helpers.js';
import { createTestDatabase } from '../src/store/test-pg.js';

interface ScriptTurn {
  usage: { input_tokens: number; output_tokens: number; cache_read_input_tokens?: number; cache_creation_input_tokens?: number };
  content: Array<{ text?: string; tool_use?: { name: string; input: Record<string, unknown> } }>;
}
const script = parseYaml(readFileSync(join(ROOT, 'agents/test-fixer/script.yaml'), 'utf8')) as { turns: ScriptTurn[] };
const expectedTools = script.turns.flatMap((t) => t.content.filter((c) => c.tool_use).map((c) => c.tool_use!.name));
const sum = (f: (t: ScriptTurn) => number | undefined) => script.turns.reduce((a, t) => a + (f(t) ?? 0), 0);

function suite(name: string, makeDb: () => Promise<{ url?: string; drop(): Promise<void> } | null>) {
  describe(`main job on ${name}`, () => {
    const { plane, skipped } = planeWithRunner({ database: makeDb });

    it('test-fixer fixes examples/calc', async (ctx) => {
      if (skipped()) ctx.skip();
      const job = await plane.client.createJob({ agent: 'test-fixer', input: { repo: 'examples/calc' }, budgetUsd: 1, priority: 0 });
      // Queued, or already assigned when a runner was free (server/dispatch-new-job.ts).
      expect(['queued', 'assigned']).toContain(job.status);
      const done = await waitFor('job to finish', async () => {
        const j = await plane.client.getJob(job.id);
        return ['succeeded', 'failed', 'cancelled', 'lost'].includes(j.status) ? j : null;
      }, 120_000, 200);
      expect({ status: done.status, error: done.error }).toEqual({ status: 'succeeded', error: null });

      // The workspace's tests now pass, and the fix is committed on the job's branch.
      const events = await allEvents(plane.store, job.id);
      const started = events.find((e) => e.type === 'harness.started');
      expect(started?.type).toBe('harness.started');
      const ws = started!.type === 'harness.started' ? started!.data.workspace! : '';
      const branch = `flotilla/job-${job.id}`;
      expect(execFileSync('git', ['rev-parse', '--abbrev-ref', 'HEAD'], { cwd: ws, encoding: 'utf8' }).trim()).toBe(branch);
      const log = execFileSync('git', ['log', '--format=%s', `${branch}`], { cwd: ws, encoding: 'utf8' }).trim().split('\n');
      expect(log.length).toBe(2); // the snapshot commit and the agent's fix
      expect(execFileSync('git', ['status', '--porcelain'], { cwd: ws, encoding: 'utf8' })).toBe('');
      const testRun = execFileSync('node', ['--test', 'test/'], { cwd: ws, encoding: 'utf8' });
      expect(testRun).toMatch(/# pass 4/);
      expect(testRun).toMatch(/# fail 0/);
      expect(readFileSync(join(ws, 'src/calc.js'), 'utf8')).toContain('let i = 0');

      // Events: the script's tool calls in order, each with a result; numbered 1..n.
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      const calls = events.filter((e) => e.type === 'tool.call').map((e) => (e.type === 'tool.call' ? e.data.name : ''));
      expect(calls).toEqual(expectedTools);
      expect(events.filter((e) => e.type === 'tool.result').length).toBe(expectedTools.length);
      expect(events.at(-1)?.type).toBe('job.finished');

      // Tokens recorded by the gateway equal the script's sums.
      expect(done.usage).toMatchObject({
        modelCalls: script.turns.length,
        inputTokens: sum((t) => t.usage.input_tokens),
        outputTokens: sum((t) => t.usage.output_tokens),
        cacheReadTokens: sum((t) => t.usage.cache_read_input_tokens),
        cacheWriteTokens: sum((t) => t.usage.cache_creation_input_tokens),
        estimatedCalls: 0,
      });
      expect(done.usage!.costMicros).toBeGreaterThan(0);
      expect(done.result?.branch).toBe(branch);
      expect(done.result?.commit).toBe(execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ws, encoding: 'utf8' }).trim());
    });
  });
}

suite('SQLite', async () => ({ url: undefined, drop: async () => {} }));
suite('PostgreSQL', async () => {
  const db = await createTestDatabase();
  if (!db && process.env.CI === 'true') throw new Error('PostgreSQL is required under CI=true');
  return db;
});
