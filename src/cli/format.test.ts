import { describe, it, expect } from 'vitest';
import type { EventBody, Job, JobEvent } from '../protocol/index.js';
import { EventFormatter, formatJobSummary, formatTable, formatToolInput, summarizeToolOutput, testTally } from './format.js';

let seq = 0;
function ev(body: EventBody): JobEvent {
  return { ...body, seq: ++seq, jobId: 7, at: '2026-11-30T12:00:00.000Z' } as JobEvent;
}

const TAP_FAIL = [
  'Exit code 1',
  '',
  '> calc@1.0.0 test',
  '> node --test test/',
  '',
  'TAP version 13',
  '# Subtest: add',
  'ok 1 - add',
  'not ok 4 - sum adds every element',
  '1..4',
  '# tests 4',
  '# suites 0',
  '# pass 3',
  '# fail 1',
  '# cancelled 0',
  '# duration_ms 158.75',
].join('\n');

describe('EventFormatter lines', () => {
  it('prints the exact lines of a test-fixer run', () => {
    const f = new EventFormatter('test-fixer');
    const events: EventBody[] = [
      { type: 'status', data: { status: 'queued' } },
      { type: 'status', data: { status: 'assigned', runnerId: 3 } },
      { type: 'progress', data: { phase: 'workspace', message: 'preparing workspace: cloning examples/calc' } },
      { type: 'harness.started', data: { harness: 'claude-code', pid: 123 } },
      { type: 'message', data: { role: 'assistant', text: "I'll run the tests first." } },
      { type: 'usage', data: { inputTokens: 1, outputTokens: 2, cacheReadTokens: 3, cacheWriteTokens: 4 } },
      { type: 'tool.call', data: { id: 't1', name: 'Bash', input: { command: 'npm test' } } },
      { type: 'tool.result', data: { id: 't1', output: TAP_FAIL, isError: true } },
      { type: 'tool.call', data: { id: 't2', name: 'Edit', input: { file_path: 'src/calc.js', old_string: 'for (let i = 1; i < xs.length; i++) {', new_string: 'for (let i = 0; i < xs.length; i++) {' } } },
      { type: 'tool.result', data: { id: 't2', name: 'Edit', output: 'The file src/calc.js has been updated successfully.', isError: false } },
      { type: 'tool.call', data: { id: 't3', name: 'Bash', input: { command: 'nope' } } },
      { type: 'tool.result', data: { id: 't3', output: 'Exit code 127\n/bin/sh: 1: nope: not found', isError: true } },
      { type: 'log', data: { stream: 'stderr', line: 'noise' } },
      { type: 'child.started', data: { jobId: 8, agent: 'pr-reviewer' } },
      { type: 'message', data: { role: 'assistant', text: 'Fixed the off-by-one in sum(). All 4 tests pass. Committed on branch flotilla/job-7.\n' } },
      { type: 'job.finished', data: { status: 'succeeded', result: { summary: 'ignored: a message came' } } },
    ];
    const lines = events.map((e) => f.line(ev(e))).filter((l): l is string => l !== null);
    expect(lines).toEqual([
      'test-fixer … waiting for a runner',
      'test-fixer … assigned to runner 3',
      'test-fixer … preparing workspace: cloning examples/calc',
      'test-fixer → Bash {"command":"npm test"}',
      'test-fixer ← Bash 3 passed, 1 failed',
      'test-fixer → Edit {"file_path":"src/calc.js", ...}',
      'test-fixer ← Edit The file src/calc.js has been updated successfully.',
      'test-fixer → Bash {"command":"nope"}',
      'test-fixer ← Bash (error) Exit code 127',
      'test-fixer ⇢ pr-reviewer (job 8)',
    ]);
    expect(f.finalLine()).toBe('test-fixer: Fixed the off-by-one in sum(). All 4 tests pass. Committed on branch flotilla/job-7.');
  });

  it('uses a status message when there is one, and the result summary when no message came', () => {
    const f = new EventFormatter('a');
    expect(f.line(ev({ type: 'status', data: { status: 'queued', message: 'no runner matches os=mac, waiting' } }))).toBe('a … no runner matches os=mac, waiting');
    expect(f.finalLine()).toBeNull();
    f.line(ev({ type: 'job.finished', data: { status: 'failed', result: { summary: 'gave up' } } }));
    expect(f.finalLine()).toBe('a: gave up');
  });

  it('names an unknown tool result "tool"', () => {
    expect(new EventFormatter('a').line(ev({ type: 'tool.result', data: { id: 'zz', output: 'ok', isError: false } }))).toBe('a ← tool ok');
  });
});

describe('formatToolInput', () => {
  it('keeps short input whole', () => {
    expect(formatToolInput({ command: 'npm test' })).toBe('{"command":"npm test"}');
  });
  it('keeps exactly 80 characters whole and cuts 81', () => {
    const at80 = { k: 'x'.repeat(80 - '{"k":""}'.length) };
    expect(JSON.stringify(at80)).toHaveLength(80);
    expect(formatToolInput(at80)).toBe(JSON.stringify(at80));
    const at81 = { a: 'b', k: 'x'.repeat(81 - '{"a":"b","k":""}'.length) };
    expect(formatToolInput(at81)).toBe('{"a":"b", ...}');
  });
  it('cuts a single long entry to 80 characters ending ...}', () => {
    const out = formatToolInput({ command: 'a'.repeat(200) });
    expect(out).toBe('{"command":"' + 'a'.repeat(64) + '...}');
    expect(out).toHaveLength(80);
  });
  it('cuts non-objects with ...', () => {
    expect(formatToolInput('s'.repeat(100))).toBe('"' + 's'.repeat(76) + '...');
    expect(formatToolInput(undefined)).toBe('null');
  });
});

describe('test tallies', () => {
  it('node:test TAP', () => expect(testTally(TAP_FAIL)).toEqual({ passed: 3, failed: 1 }));
  it('node:test spec, with colours', () => {
    const spec = '\u001b[32m✔ add (0.5ms)\u001b[39m\n\u001b[34mℹ tests 4\u001b[39m\n\u001b[34mℹ pass 3\u001b[39m\n\u001b[34mℹ fail 1\u001b[39m\n';
    expect(summarizeToolOutput(spec, true)).toBe('3 passed, 1 failed');
  });
  it('jest', () => {
    expect(summarizeToolOutput('Test Suites: 1 failed, 1 total\nTests:       1 failed, 3 passed, 4 total\nTime: 1 s', true)).toBe('3 passed, 1 failed');
    expect(summarizeToolOutput('Tests:       4 passed, 4 total', false)).toBe('4 passed, 0 failed');
  });
  it('vitest', () => {
    expect(summarizeToolOutput(' Test Files  1 failed (1)\n      Tests  1 failed | 3 passed (4)\n', true)).toBe('3 passed, 1 failed');
  });
  it('pytest', () => {
    expect(summarizeToolOutput('collected 4 items\n\n==================== 1 failed, 3 passed in 0.12s ====================', true)).toBe('3 passed, 1 failed');
    expect(summarizeToolOutput('4 passed in 0.05s', false)).toBe('4 passed, 0 failed');
  });
  it('mocha', () => {
    expect(summarizeToolOutput('  3 passing (12ms)\n  1 failing\n', true)).toBe('3 passed, 1 failed');
  });
  it('takes the last run when there are several', () => {
    expect(testTally('# pass 3\n# fail 1\n...\n# pass 4\n# fail 0\n')).toEqual({ passed: 4, failed: 0 });
  });
  it('no tallies: first non-empty line, whitespace squeezed, cut to 80', () => {
    expect(summarizeToolOutput('\n\n1\t/** Adds two numbers. */\n2\texport', false)).toBe('1 /** Adds two numbers. */');
    const long = 'w'.repeat(100);
    expect(summarizeToolOutput(long, false)).toBe('w'.repeat(77) + '...');
    expect(summarizeToolOutput('', false)).toBe('(no output)');
    expect(testTally('passes: 3 of 4, "# pass" in prose')).toBeNull();
  });
});

function job(over: Partial<Job>): Job {
  return {
    id: 1,
    parentId: null,
    rootId: 1,
    agent: 'test-fixer',
    agentVersion: '1',
    input: {},
    status: 'succeeded',
    endReason: null,
    error: null,
    priority: 0,
    selector: {},
    runnerId: 2,
    attempt: 1,
    budgetMicros: 1_000_000,
    sessionId: null,
    result: null,
    createdAt: 'x',
    assignedAt: null,
    startedAt: null,
    finishedAt: null,
    ...over,
  };
}

describe('cost table', () => {
  it('prints job, agent, status, calls, tokens and dollars with 6 decimals', () => {
    const out = formatJobSummary(
      job({ usage: { modelCalls: 6, inputTokens: 34, outputTokens: 505, cacheReadTokens: 76_208, cacheWriteTokens: 16_130, costMicros: 91_028, estimatedCalls: 0 } }),
    );
    expect(out).toBe(
      'job  agent       status     model calls  input  output  cache read  cache write  cost\n' +
        '1    test-fixer  succeeded  6            34     505     76208       16130        $0.091028',
    );
  });
  it('adds the reason and error when the job did not succeed; unknown usage shows -', () => {
    const out = formatJobSummary(job({ status: 'failed', endReason: 'max_turns', error: 'stopped after 30 turns' }));
    expect(out.split('\n')).toEqual([
      'job  agent       status  model calls  input  output  cache read  cache write  cost',
      '1    test-fixer  failed  -            -      -       -           -            -',
      'reason: max_turns',
      'error: stopped after 30 turns',
    ]);
  });
  it('marks estimated calls', () => {
    const out = formatJobSummary(job({ usage: { modelCalls: 2, inputTokens: 1, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0, costMicros: 1_500_000, estimatedCalls: 1 } }));
    expect(out.endsWith('$1.500000 (1 estimated)')).toBe(true);
  });
  it('formatTable shows every cell on one line: control characters and U+2028/U+2029 become one space', () => {
    expect(formatTable(['name', 'reason'], [['box\u001b[31m', 'a\r\nb\u2028c\u0085d\te']])).toBe('name      reason\nbox [31m  a b c d e');
  });

  it('formatTable pads columns, no trailing spaces', () => {
    expect(formatTable(['a', 'bb'], [['xxx', ''], ['y', 'z']])).toBe('a    bb\nxxx\ny    z');
  });
});
