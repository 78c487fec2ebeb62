import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../main.js';
import { packageRoot } from '../paths.js';
import { recordingIO, waitFor } from '../test-io.js';

// `flotilla run --local` through main(): real store, server, runner, Claude Code CLI and the
// offline scripted model (agents/test-fixer/script.yaml), on examples/calc.

const savedEnv = { ...process.env };
const savedCwd = process.cwd();
let data: string;

beforeEach(async () => {
  data = await mkdtemp(join(tmpdir(), 'flotilla-local-'));
  for (const k of Object.keys(process.env)) if (k.startsWith('FLOTILLA_') || k === 'DATABASE_URL' || k.startsWith('ANTHROPIC_')) delete process.env[k];
  process.chdir(packageRoot()); // examples/calc resolves against the current folder
});

afterEach(async () => {
  process.env = { ...savedEnv };
  process.chdir(savedCwd);
  await rm(data, { recursive: true, force: true });
});

describe('flotilla run --local', () => {
  it('runs test-fixer on examples/calc: model line first, tool lines, final message, table; exit 0', async () => {
    const io = recordingIO();
    const code = await main(['node', 'flotilla', 'run', '--local', 'test-fixer', '{"repo":"examples/calc"}', '--budget', '1', '--data', data], io);
    const out = io.out();
    expect(code, `${out}\n${io.err()}`).toBe(0);
    const lines = out.split('\n');
    expect(lines[0]).toBe('flotilla: offline scripted model (no ANTHROPIC_API_KEY set)');
    const tools = lines.filter((l) => /^test-fixer [→←] /.test(l));
    expect(tools[0]).toMatch(/^test-fixer → Bash \{"command":"npm test"/);
    expect(tools[1]).toBe('test-fixer ← Bash 3 passed, 1 failed');
    expect(tools).toContain('test-fixer ← Bash 4 passed, 0 failed');
    expect(tools.some((l) => l.startsWith('test-fixer → Edit {'))).toBe(true);
    expect(lines.some((l) => l.startsWith('test-fixer … preparing workspace'))).toBe(true);
    expect(lines.find((l) => l.startsWith('test-fixer: '))).toMatch(/flotilla\/job-\d+/);
    const header = lines.findIndex((l) => l.startsWith('job  agent'));
    expect(lines[header]).toMatch(/^job\s+agent\s+status\s+model calls\s+input\s+output\s+cache read\s+cache write\s+cost$/);
    expect(lines[header + 1]).toMatch(/^\d+\s+test-fixer\s+succeeded\s+[1-9]\d*\s+\d+\s+\d+\s+\d+\s+\d+\s+\$0\.\d{6}$/);
  });

  it('a budget below the first call\'s worst case: the job pauses, is cancelled, exit 1 with how to run it again (never "still working")', async () => {
    const io = recordingIO();
    const code = await main(['node', 'flotilla', 'run', '--local', 'test-fixer', '{"repo":"examples/calc"}', '--budget', '0.01', '--data', data], io);
    expect(code, `${io.out()}\n${io.err()}`).toBe(1);
    expect(io.out()).toMatch(/^test-fixer … budget exhausted: job tree \d+ \(job \d+\) has a budget of \$0\.010000/m);
    expect(io.err()).toMatch(/flotilla: job (\d+) paused: its budget \(--budget 0\.01\) does not cover the next model call; a --local run cannot be topped up .*\nflotilla: job \1 cancelled\n$/);
    expect(io.err()).not.toMatch(/still working/);
    // no top-up advice it cannot follow (its server ends with the command: tester finding) ...
    expect(io.out()).not.toContain('Top up with');
    // ... and the --budget that would have let the refused call through: nothing spent before it
    // plus its worst case (the pause line's figure), in whole cents, rounded up — not the resume
    // rule's need, grown by 8 KiB for a resumed harness (a tester's $0.030294 was advised as $0.05)
    const worst = Math.round(Number(/this call may cost up to \$(\d+\.\d{6})/.exec(io.out())![1]) * 1e6);
    const advice = /run it again with --budget (\d+\.\d\d) or more \(what would have let the refused call through; every call needs room for its worst case \(this one up to \$(\d+\.\d{6})\) on top of all the job spends before it, so a budget of the job's whole cost plus that lets it finish\)/.exec(io.err())!;
    expect(Math.round(Number(advice[1]) * 100)).toBe(Math.ceil(worst / 10_000));
    // and why a budget of just that may not finish the job: each later call needs its worst case on top (a newcomer reran it four times)
    expect(Math.round(Number(advice[2]) * 1e6)).toBe(worst);
  });

  it('reads flotilla.yaml (FLOTILLA_CONFIG) as `flotilla up` does: its price for the job\'s model sets the budget check', async () => {
    // $1,000 per million tokens: the first call's worst case (max_tokens alone at the output
    // price) is far above --budget 1, so the job pauses at once; at the table's price it succeeds.
    const file = join(data, 'flotilla.yaml');
    await writeFile(file, 'gateway:\n  prices:\n    claude-sonnet-4-5: { input: 1000, output: 1000, cacheWrite5m: 1000, cacheWrite1h: 1000, cacheRead: 1000, longContext: null }\n');
    process.env.FLOTILLA_CONFIG = file;
    const io = recordingIO();
    const code = await main(['node', 'flotilla', 'run', '--local', 'test-fixer', '{"repo":"examples/calc"}', '--budget', '1', '--data', join(data, 'store')], io);
    expect(code, `${io.out()}\n${io.err()}`).toBe(1);
    expect(io.out(), io.err()).toMatch(/^test-fixer … budget exhausted: job tree \d+ \(job \d+\) has a budget of \$1\.000000, \$0\.000000 spent/m);
  });

  it('Ctrl-C cancels the job, stops everything, exit 130', async () => {
    const io = recordingIO();
    const done = main(['node', 'flotilla', 'run', '--local', 'test-fixer', '{"repo":"examples/calc"}', '--data', data], io);
    await waitFor(() => io.out().includes('test-fixer … starting claude-code'), 'the harness to start', 30_000);
    io.signals.emit('SIGINT');
    expect(await done).toBe(130);
    expect(io.err()).toMatch(/flotilla: interrupted: cancelling job \d+\nflotilla: job \d+ cancelled\n/);
    // Everything closed: the same data folder opens again at once (its lock was released).
    const again = recordingIO();
    expect(await main(['node', 'flotilla', 'run', '--local', 'no-such-agent', '--data', data], again)).toBe(1);
    expect(again.err()).toMatch(/no-such-agent/);
  });
});
