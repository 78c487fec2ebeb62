import { describe, expect, it } from 'vitest';
import { MemoryGatewayStore } from '../memory-store.js';
import type { MessagesRequest } from '../request.js';
import { parseModelScript } from '../script.js';
import { SseParser } from '../sse.js';
import { replySse, SCRIPT_FINISHED_TEXT, scriptedReply, scriptedResponse } from './scripted.js';

const job = new MemoryGatewayStore().addJob('flj_x', { id: 42, agent: 'demo', input: { n: 3 } });
const script = parseModelScript({
  turns: [
    {
      usage: { input_tokens: 10, output_tokens: 20, cache_creation_input_tokens: 30 },
      content: [{ text: 'Running on {{job.branch}}' }, { tool_use: { name: 'Bash', input: { command: 'echo {{job.id}} {{input.n}}', cwd: '{{workspace}}' } } }, { tool_use: { name: 'Read', input: { file_path: 'a.js' } } }],
    },
    { usage: { input_tokens: 1, output_tokens: 2 }, content: [{ text: 'done' }] },
  ],
});
const req = (assistants: number, extra: Partial<MessagesRequest> = {}): MessagesRequest => ({
  model: 'claude-x',
  system: [{ type: 'text', text: 'Env:\n - Primary working directory: /tmp/ws-1\n - Is a git repository: true' }],
  messages: Array.from({ length: assistants * 2 + 1 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: 'x' })),
  ...extra,
});

describe('scriptedReply', () => {
  it('plays turn N for a request holding N assistant messages, with placeholders filled', () => {
    const r = scriptedReply(script, job, req(0));
    expect(r.turn).toBe(0);
    expect(r.model).toBe('claude-x');
    expect(r.stopReason).toBe('tool_use');
    expect(r.content).toEqual([
      { type: 'text', text: 'Running on flotilla/job-42' },
      { type: 'tool_use', id: 'toolu_42_0_1', name: 'Bash', input: { command: 'echo 42 3', cwd: '/tmp/ws-1' } },
      { type: 'tool_use', id: 'toolu_42_0_2', name: 'Read', input: { file_path: 'a.js' } },
    ]);
    expect(r.usage).toEqual({ input_tokens: 10, output_tokens: 20, cache_read_input_tokens: 0, cache_creation_input_tokens: 30 });
    const second = scriptedReply(script, job, req(1));
    expect(second).toMatchObject({ turn: 1, stopReason: 'end_turn', content: [{ type: 'text', text: 'done' }] });
    // a job resuming job 9's session works in its workspace, on its branch (it named flotilla/job-43, which does not exist: tester finding)
    const resumed = { ...job, id: 43, workspaceJobId: 9 };
    expect(scriptedReply(script, resumed, req(0)).content[0]).toEqual({ type: 'text', text: 'Running on flotilla/job-9' });
  });

  it("a session resumed after a refused call (Claude Code's history on --resume) plays the turn that was refused, not the one after", () => {
    // What Claude Code 2.1 sent on `--resume S -p PROMPT` after its second request got a 402
    // (captured against a fake upstream): the tool result with "Continue from where you left
    // off.", its filler assistant message, then the prompt again.
    const resumed: MessagesRequest = {
      ...req(0),
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'fix the test' }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_42_0_1', name: 'Bash', input: { command: 'npm test' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_42_0_1', content: '1 failed' }, { type: 'text', text: 'Continue from where you left off.' }] },
        { role: 'assistant', content: [{ type: 'text', text: 'No response requested.' }] },
        { role: 'user', content: [{ type: 'text', text: 'fix the test' }] },
      ],
    };
    expect(scriptedReply(script, job, resumed)).toMatchObject({ turn: 1, content: [{ type: 'text', text: 'done' }] });
    // the same text as a string content, too; any other assistant text is a turn played
    const asString = { ...resumed, messages: resumed.messages.map((m, i) => (i === 3 ? { role: 'assistant', content: 'No response requested.' } : m)) };
    expect(scriptedReply(script, job, asString).turn).toBe(1);
    const other = { ...resumed, messages: resumed.messages.map((m, i) => (i === 3 ? { role: 'assistant', content: [{ type: 'text', text: 'No response requested. Really.' }] } : m)) };
    expect(scriptedReply(script, job, other).turn).toBe(-1); // 2 turns played: past the script's end
  });

  it('answers "script finished" past the last turn and says so when there is no script', () => {
    expect(scriptedReply(script, job, req(2))).toMatchObject({ content: [{ type: 'text', text: SCRIPT_FINISHED_TEXT }], stopReason: 'end_turn', usage: { input_tokens: 0, output_tokens: 0 } });
    const none = scriptedReply(null, job, req(0));
    expect(none.content[0]).toMatchObject({ type: 'text' });
    expect((none.content[0] as { text: string }).text).toMatch(/no script for agent "demo"/);
  });
});

describe('replySse', () => {
  it('emits the Anthropic event sequence; the fragments rebuild the tool input', () => {
    const p = new SseParser();
    const events = p.push(replySse(job, scriptedReply(script, job, req(0))));
    expect(events.map((e) => e.event)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    const data = events.map((e) => JSON.parse(e.data) as Record<string, any>); // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(data[0]!.message.usage).toEqual({ input_tokens: 10, output_tokens: 1, cache_read_input_tokens: 0, cache_creation_input_tokens: 30 });
    const text = data.filter((d) => d.index === 0 && d.type === 'content_block_delta').map((d) => d.delta.text).join('');
    expect(text).toBe('Running on flotilla/job-42');
    expect(data[7]!.content_block).toEqual({ type: 'tool_use', id: 'toolu_42_0_1', name: 'Bash', input: {} });
    const json = data.filter((d) => d.index === 1 && d.type === 'content_block_delta').map((d) => d.delta.partial_json).join('');
    expect(JSON.parse(json)).toEqual({ command: 'echo 42 3', cwd: '/tmp/ws-1' });
    expect(data[17]).toMatchObject({ delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 20, input_tokens: 10 } });
  });
});

describe('scriptedResponse', () => {
  it('serves JSON when not streamed', async () => {
    const res = scriptedResponse(script, job, req(1, { stream: false }));
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await res.json()).toMatchObject({ type: 'message', role: 'assistant', content: [{ type: 'text', text: 'done' }], stop_reason: 'end_turn', usage: { input_tokens: 1, output_tokens: 2 } });
  });
  it('serves SSE when streamed', async () => {
    const res = scriptedResponse(script, job, req(1, { stream: true }));
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(await res.text()).toMatch(/^event: message_start\n/);
  });
});
