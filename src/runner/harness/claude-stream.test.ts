import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { EventBody } from '../../protocol/index.js';
import { EventBody as EventBodySchema } from '../../protocol/index.js';
import { LineSplitter } from '../lines.js';
import { ClaudeStreamParser, cutBytes } from './claude-stream.js';

/** Feeds a recorded transcript through the real line splitter, in odd-sized chunks. */
function parseFile(name: string, chunk = 97): { parser: ClaudeStreamParser; events: EventBody[] } {
  const bytes = readFileSync(new URL(`./testdata/${name}`, import.meta.url));
  const parser = new ClaudeStreamParser({ pid: 4242, workspace: '/w/job-1', branch: 'flotilla/job-1' });
  const events: EventBody[] = [];
  const split = new LineSplitter((l) => events.push(...parser.stdout(l)));
  for (let i = 0; i < bytes.length; i += chunk) split.push(bytes.subarray(i, i + chunk));
  split.end();
  return { parser, events };
}

const line = (text: string) => ({ text, truncated: false, droppedBytes: 0, invalidUtf8: false });

describe('ClaudeStreamParser on recorded Claude Code 2.1.197 transcripts', () => {
  it('turns a successful run into the normalized events and outcome', () => {
    const { parser, events } = parseFile('claude-2.1.197-success.jsonl');
    const sid = '28ad95db-cd02-480a-8b84-274d477dab54';
    expect(events).toEqual([
      { type: 'harness.started', data: { harness: 'claude-code', pid: 4242, sessionId: sid, workspace: '/w/job-1', branch: 'flotilla/job-1' } },
      { type: 'message', data: { role: 'assistant', text: 'Running the tests first.' } },
      // msg_0's usage appears on both of its lines; counted once.
      { type: 'usage', data: { inputTokens: 100, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 50, model: 'claude-sonnet-4-5' } },
      { type: 'tool.call', data: { id: 'toolu_01', name: 'Bash', input: { command: 'echo hello; ls' } } },
      { type: 'tool.result', data: { id: 'toolu_01', name: 'Bash', output: 'hello\na.txt', isError: false } },
      { type: 'tool.call', data: { id: 'toolu_02', name: 'Read', input: { file_path: '/etc/hostname' } } },
      { type: 'usage', data: { inputTokens: 150, outputTokens: 1, cacheReadTokens: 50, cacheWriteTokens: 0, model: 'claude-sonnet-4-5' } },
      { type: 'tool.result', data: { id: 'toolu_02', name: 'Read', output: '1\tvm\n2\t', isError: false } },
      { type: 'message', data: { role: 'assistant', text: 'All done. Fixed it on branch x.' } },
      { type: 'usage', data: { inputTokens: 200, outputTokens: 1, cacheReadTokens: 100, cacheWriteTokens: 0, model: 'claude-sonnet-4-5' } },
    ]);
    for (const e of events) expect(EventBodySchema.safeParse(e).success).toBe(true);
    expect(parser.finish({ code: 0, signal: null })).toEqual({ status: 'succeeded', summary: 'All done. Fixed it on branch x.', sessionId: sid });
  });

  it('maps error_max_turns to failed max_turns', () => {
    const { parser } = parseFile('claude-2.1.197-max-turns.jsonl', 13);
    expect(parser.finish({ code: 1, signal: null })).toEqual({
      status: 'failed',
      reason: 'max_turns',
      error: 'claude-code hit its turn limit after 2 turns',
      summary: 'Running the tests first.', // no result text: the last assistant text
      sessionId: '5dbcfea3-64d2-428b-8eb6-5a919080dd98',
    });
  });

  it('maps a 402 from the gateway (result subtype success, is_error true) to failed budget, without usage', () => {
    const { parser, events } = parseFile('claude-2.1.197-api-402.jsonl');
    expect(events.map((e) => e.type)).toEqual(['harness.started', 'message']);
    expect(parser.finish({ code: 1, signal: null })).toMatchObject({ status: 'failed', reason: 'budget', error: 'API Error: 402 budget exhausted for job tree' });
  });
});

describe('ClaudeStreamParser edge cases', () => {
  it('reports malformed, truncated and invalid UTF-8 lines as log events', () => {
    const p = new ClaudeStreamParser({ pid: 1 });
    expect(p.stdout(line('{"type":"assistant", broken'))).toEqual([{ type: 'log', data: { stream: 'stdout', line: '{"type":"assistant", broken' } }]);
    expect(p.stdout(line('[1,2]'))).toEqual([{ type: 'log', data: { stream: 'stdout', line: '[1,2]' } }]);
    expect(p.stdout({ text: '{"type":"user"', truncated: true, droppedBytes: 100, invalidUtf8: false })).toEqual([
      // the 100 bytes never read are counted in the cut: 114 in all, 14 kept
      { type: 'log', data: { stream: 'stdout', line: '[line of 114 bytes truncated, not parsed] {"type":"user"… [100 bytes cut]' } },
    ]);
    expect(p.stdout({ text: 'ab\uFFFD', truncated: false, droppedBytes: 0, invalidUtf8: true })).toEqual([{ type: 'log', data: { stream: 'stdout', line: '[invalid UTF-8] ab\uFFFD' } }]);
    expect(p.stdout(line(''))).toEqual([]);
    expect(p.stdout(line('{"type":"stream_event"}'))).toEqual([]);
  });

  it('cuts tool output to 64 KiB and marks it truncated; joins text blocks', () => {
    const p = new ClaudeStreamParser({ pid: 1 });
    p.stdout(line(JSON.stringify({ type: 'assistant', message: { id: 'm', content: [{ type: 'tool_use', id: 't1', name: 'Bash', input: {} }] } })));
    const big = 'é'.repeat(40_000); // 80,000 bytes
    const [r] = p.stdout(line(JSON.stringify({ type: 'user', message: { content: [{ type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: big }] }] } })));
    expect(r?.type).toBe('tool.result');
    const data = (r as Extract<EventBody, { type: 'tool.result' }>).data;
    expect(data.truncated).toBe(true);
    expect(data.output).toBe('é'.repeat(32_768));
    expect(data.name).toBe('Bash');
    const [r2] = p.stdout(line(JSON.stringify({ type: 'user', message: { content: [{ type: 'tool_result', tool_use_id: 'unknown', content: [{ type: 'text', text: 'a' }, { type: 'image' }, { type: 'text', text: 'b' }], is_error: true }] } })));
    expect(r2).toEqual({ type: 'tool.result', data: { id: 'unknown', output: 'a\n[image]\nb', isError: true } });
  });

  it('fails with the last stderr lines when there is no result line', () => {
    const p = new ClaudeStreamParser({ pid: 1 });
    for (let i = 1; i <= 8; i++) expect(p.stderr(line(`err ${i}`))).toEqual([{ type: 'log', data: { stream: 'stderr', line: `err ${i}` } }]);
    expect(p.finish({ code: 2, signal: null })).toEqual({ status: 'failed', reason: 'error', error: 'claude-code exited with code 2 without a result: err 4\nerr 5\nerr 6\nerr 7\nerr 8', sessionId: undefined });
    expect(new ClaudeStreamParser({ pid: 1 }).finish({ code: null, signal: 'SIGKILL' }).error).toBe('claude-code was killed by SIGKILL without a result (no stderr output)');
  });

  it('recognizes the root refusal at once and says what to do', () => {
    const p = new ClaudeStreamParser({ pid: 1 });
    expect(p.fatal).toBe(false);
    p.stderr(line('--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons'));
    expect(p.fatal).toBe(true);
    expect(p.finish({ code: 1, signal: null })).toMatchObject({ status: 'failed', reason: 'harness_start', error: expect.stringContaining('IS_SANDBOX=1') });
  });

  it('maps other error results to failed error with the message', () => {
    const p = new ClaudeStreamParser({ pid: 1 });
    p.stdout(line(JSON.stringify({ type: 'result', subtype: 'error_during_execution', is_error: true, errors: ['tool crashed', 'again'], session_id: 's' })));
    expect(p.finish({ code: 1, signal: null })).toEqual({ status: 'failed', reason: 'error', error: 'claude-code failed: tool crashed; again', summary: undefined, sessionId: 's' });
  });

  it('emits api_retry as progress', () => {
    const p = new ClaudeStreamParser({ pid: 1 });
    expect(p.stdout(line(JSON.stringify({ type: 'system', subtype: 'api_retry', attempt: 2, max_retries: 10, error_status: 529 })))).toEqual([
      { type: 'progress', data: { phase: 'harness', message: 'model API call failed, retrying 2/10 (529)' } },
    ]);
  });
});

describe('cutBytes', () => {
  it('never splits a character', () => {
    expect(cutBytes('aaa€', 5)).toEqual({ text: 'aaa', truncated: true });
    expect(cutBytes('aaa€', 6)).toEqual({ text: 'aaa€', truncated: false });
    expect(cutBytes('😀😀', 7)).toEqual({ text: '😀', truncated: true });
  });
});
