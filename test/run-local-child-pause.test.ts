/**
 * `run --local` whose job's child pauses for budget: the local server ends with the command, so
 * nobody can top the child up; the command stops, cancels the tree and says which job paused
 * and the --budget that lets its call through (tester finding: it printed "still ..." until the
 * root's timeout). Real server, runner, gateway (scripted model) and two `command` agents: the
 * parent starts a child through the API with its job token; the child asks for a call whose
 * worst case ($0.96 of output at $15 per million) the $0.05 tree cannot afford. Both hold no
 * runner slot (`holds: none`): the local runner has one, and the parent waits on its child.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../src/cli/main.js';
import { recordingIO } from '../src/cli/test-io.js';

const dir = mkdtempSync(join(tmpdir(), 'flotilla-child-pause-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function agent(name: string, script: string): void {
  mkdirSync(join(dir, 'agents', name), { recursive: true });
  writeFileSync(join(dir, 'agents', name, 'agent.yaml'), `name: ${name}\nversion: "1"\nharness: command\ncommand: [node, ./agent.mjs]\nmodel: claude-sonnet-4-5\nprompt: prompt.md\nholds: none\nlimits:\n  timeoutSeconds: 120\n  defaultBudgetUsd: 1\n`);
  writeFileSync(join(dir, 'agents', name, 'prompt.md'), `Run ${name}.`);
  writeFileSync(join(dir, 'agents', name, 'agent.mjs'), script);
}

agent(
  'par',
  `const r = await fetch(process.env.FLOTILLA_URL + '/api/jobs', { method: 'POST', headers: { authorization: 'Bearer ' + process.env.FLOTILLA_JOB_TOKEN, 'content-type': 'application/json' }, body: JSON.stringify({ agent: 'kid', input: {} }) });
console.log(JSON.stringify({ type: 'message', data: { role: 'assistant', text: 'started child ' + (await r.json()).id } }));
await new Promise((z) => setTimeout(z, 100000));
`,
);
agent(
  'kid',
  `const r = await fetch(process.env.ANTHROPIC_BASE_URL + '/v1/messages', { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': process.env.ANTHROPIC_API_KEY, 'anthropic-version': '2023-06-01' }, body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 64000, messages: [{ role: 'user', content: 'go' }] }) });
console.log('model call: HTTP ' + r.status);
process.exit(r.status === 200 ? 0 : 3);
`,
);

describe('run --local with a child paused for budget', () => {
  it('stops, names the paused child and the --budget its call needs, cancels the tree: exit 1', async () => {
    const io = recordingIO();
    const started = Date.now();
    const code = await main(['node', 'flotilla', 'run', '--local', 'par', '{}', '--agents', join(dir, 'agents'), '--budget', '0.05', '--data', join(dir, 'data')], io);
    expect(code, `${io.out()}\n${io.err()}`).toBe(1);
    expect(Date.now() - started).toBeLessThan(60_000); // not the root's 120 s timeout
    const err = io.err();
    expect(err).toMatch(/flotilla: job (\d+), a child of job (\d+), paused: the tree's budget \(--budget 0\.05\) does not cover its next model call; a --local run cannot be topped up/);
    // its call's worst case: ⌈bytes / 3⌉ input tokens at $6 (the dearest input-side rate) + 64,000 × $15 per million ≥ $0.96: --budget 0.97 or more
    const advised = Number(/run it again with --budget (\d+\.\d\d) or more/.exec(err)![1]);
    expect(advised).toBeGreaterThanOrEqual(0.97);
    expect(advised).toBeLessThan(1);
    expect(err).toMatch(/flotilla: job \d+ cancelled\n$/);
    // the child's pause line names no top-up nobody could give (it did, then the run said none could: fresh tester)
    expect(io.out()).toMatch(/\(job \d+\) paused for budget\n/);
    expect(io.out() + err).not.toContain('from another shell');
  }, 120_000);
});
