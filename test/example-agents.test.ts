/**
 * The shipped example agents pr-reviewer and code-explainer, end to end on real parts: a
 * control plane (SQLite), one runner, the real Claude Code CLI against each agent's offline
 * script (agents/<name>/script.yaml). Expected values come from the repositories the test
 * makes and from the scripts, not from the code under test.
 */
import { describe, it, expect, onTestFinished } from 'vitest';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { parse as parseYaml } from 'yaml';
import type { Job, JobEvent } from '../src/protocol/index.js';
import { ROOT, planeWithRunner, waitFor, allEvents } from './helpers.js';

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@e', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@e' } }).trim();

/** The last text turn of an agent's script: what the job's result summary must be. */
function lastText(agent: string): string {
  const s = parseYaml(readFileSync(join(ROOT, 'agents', agent, 'script.yaml'), 'utf8')) as { turns: { content: { text?: string }[] }[] };
  return s.turns.at(-1)!.content.find((c) => c.text !== undefined)!.text!;
}

const calls = (events: JobEvent[]) => events.flatMap((e) => (e.type === 'tool.call' ? [e.data.name] : []));
const results = (events: JobEvent[]) => events.flatMap((e) => (e.type === 'tool.result' ? [e.data] : []));

describe('example agents (real Claude Code, scripted model)', () => {
  const { plane } = planeWithRunner();

  async function finished(id: number): Promise<Job> {
    return waitFor('job to finish', async () => {
      const j = await plane.client.getJob(id);
      return ['succeeded', 'failed', 'cancelled', 'lost'].includes(j.status) ? j : null;
    }, 180_000, 250);
  }

  it('pr-reviewer reviews a change against the guidelines file and returns review comments', async () => {
    // Under the runner's repo base (the checkout), in a git-ignored folder.
    mkdirSync(join(ROOT, 'test-results'), { recursive: true });
    const repo = mkdtempSync(join(ROOT, 'test-results', 'pr-reviewer-'));
    onTestFinished(() => rmSync(repo, { recursive: true, force: true }));
    mkdirSync(join(repo, 'src'), { recursive: true });
    git(repo, 'init', '-q', '-b', 'main');
    writeFileSync(join(repo, 'REVIEW_GUIDELINES.md'), '# Review guidelines\n\n- Use const or let, never var.\n- No console.log in library code: return values instead.\n');
    writeFileSync(join(repo, 'src/greet.js'), "/** Greets someone by name. */\nexport function greet(name) {\n  return 'Hello, ' + name;\n}\n");
    git(repo, 'add', '-A');
    git(repo, 'commit', '-qm', 'greet');
    // The change under review: line 3 uses var, line 4 logs.
    writeFileSync(join(repo, 'src/greet.js'), "/** Greets someone by name. */\nexport function greet(name) {\n  var prefix = 'Hello, ';\n  console.log(prefix + name);\n  return prefix + name;\n}\n");
    git(repo, 'commit', '-qam', 'greet: log the greeting');

    const job = await plane.client.createJob({ agent: 'pr-reviewer', input: { repo }, budgetUsd: 1, priority: 0 });
    const done = await finished(job.id);
    expect({ status: done.status, error: done.error, agentVersion: done.agentVersion }).toEqual({ status: 'succeeded', error: null, agentVersion: '1' });
    const events = await allEvents(plane.store, job.id);
    expect(calls(events)).toEqual(['Read', 'Bash']);
    const [guidelines, diff] = results(events);
    expect(guidelines!.isError).toBe(false);
    expect(guidelines!.output).toContain('never var');
    expect(diff!.isError, diff!.output).toBe(false);
    expect(diff!.output).toContain("+  var prefix = 'Hello, ';");
    expect(diff!.output).toContain('+  console.log(prefix + name);');
    // The structured result: the review comments, each on the line the diff shows.
    const review = JSON.parse(done.result!.summary!) as { verdict: string; comments: { file: string; line: number; guideline: string }[] };
    expect(review.verdict).toBe('changes_requested');
    expect(review.comments.map((c) => [c.file, c.line])).toEqual([['src/greet.js', 3], ['src/greet.js', 4]]);
    const lines = readFileSync(join(repo, 'src/greet.js'), 'utf8').split('\n');
    expect(lines[2]).toContain('var prefix');
    expect(lines[3]).toContain('console.log');
    const rules = readFileSync(join(repo, 'REVIEW_GUIDELINES.md'), 'utf8');
    for (const c of review.comments) expect(rules).toContain(c.guideline);
    expect(done.result!.summary).toBe(lastText('pr-reviewer'));
    // It changed nothing: no commit on its branch, no changed file.
    expect(done.result!.commit).toBeUndefined();
    expect(done.result!.changedFiles ?? []).toEqual([]);
  }, 240_000);

  it('code-explainer answers a question with read-only tools, in a read-only workspace', async () => {
    const job = await plane.client.createJob({ agent: 'code-explainer', input: { repo: 'examples/calc', question: 'What does sum() do?' }, budgetUsd: 1, priority: 0 });
    const done = await finished(job.id);
    expect({ status: done.status, error: done.error }).toEqual({ status: 'succeeded', error: null });
    const agent = (await plane.client.listAgents()).find((a) => a.name === 'code-explainer')!;
    expect(agent.readOnly).toBe(true);
    expect(agent.allowedTools).toEqual(['Read', 'Glob', 'Grep']);
    const events = await allEvents(plane.store, job.id);
    expect(calls(events)).toEqual(['Grep', 'Read']);
    const [grep, read] = results(events);
    expect(grep!.isError).toBe(false);
    expect(grep!.output).toMatch(/calc\.js.*12.*function sum|12.*function sum/);
    expect(read!.isError).toBe(false);
    expect(read!.output).toContain('for (let i = 1; i < xs.length; i++) {');
    // The answer's line numbers match the file it read.
    const src = readFileSync(join(ROOT, 'examples/calc/src/calc.js'), 'utf8').split('\n');
    expect(src[11]).toContain('export function sum(xs)');
    expect(src[13]).toContain('for (let i = 1;');
    expect(done.result!.summary).toBe(lastText('code-explainer'));
    expect(done.result!.changedFiles ?? []).toEqual([]);
  }, 240_000);
});
