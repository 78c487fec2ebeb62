import { describe, expect, it } from 'vitest';
import { stripUsageChunks, usageChunkStripper, withoutUsageMember } from './openai-strip.js';

const chunk = (o: object) => `data: ${JSON.stringify(o)}\n\n`;
// What OpenAI streams with `include_usage` (A, B: "usage": null on every chunk) and, for the
// same reply, without it (A0, B0: no usage field), as its API reference documents.
const A = chunk({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'héllo' } }], usage: null });
const B = chunk({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: null });
const A0 = chunk({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'héllo' } }] });
const B0 = chunk({ id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
const USAGE = chunk({ id: 'c', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 9, completion_tokens: 2 } });
const SPACED_USAGE = 'data: {"choices": [ ], "usage": {"prompt_tokens": 9, "completion_tokens": 2}}\r\n\r\n';
const DONE = 'data: [DONE]\n\n';

/** Runs `parts` through one stripper; the concatenated output. */
function run(parts: Buffer[]): string {
  const t = usageChunkStripper();
  return Buffer.concat([...parts.map((p) => t.push(p)), t.end!()]).toString('utf8');
}

describe('usageChunkStripper', () => {
  it('the client sees the stream OpenAI sends without include_usage: no usage-only event, no usage: null member, wherever the chunks are cut', () => {
    const all = Buffer.from(A + B + USAGE + DONE);
    const want = A0 + B0 + DONE;
    for (let cut = 0; cut <= all.length; cut++) expect(run([all.subarray(0, cut), all.subarray(cut)]), `cut ${cut}`).toBe(want);
    // every byte its own chunk (the é split in two)
    expect(run([...all].map((b) => Buffer.from([b])))).toBe(want);
  });

  it('other spacing and CRLF line ends; a stream without an end blank line', () => {
    expect(run([Buffer.from(A + SPACED_USAGE + DONE)])).toBe(A0 + DONE);
    expect(run([Buffer.from(A + 'data: [DONE]')])).toBe(A0 + 'data: [DONE]');
    expect(run([Buffer.from(A + USAGE.trimEnd())])).toBe(A0);
    expect(run([Buffer.from(A.replace('\n\n', '\r\n\r\n') + B.replace('data: ', 'data:'))])).toBe(A0.replace('\n\n', '\r\n\r\n') + B0.replace('data: ', 'data:'));
  });

  it("a usage member in other places and spellings: the top-level one is removed, every other byte kept; a nested one, or text that only looks like one, is the upstream's", () => {
    // an OpenAI-compatible server's figures on a content chunk, spaced, first, or given twice
    expect(withoutUsageMember('{"choices": [{"delta": {"content": "x"}}], "usage": {"prompt_tokens": 9, "completion_tokens": 2}}')).toBe('{"choices": [{"delta": {"content": "x"}}]}');
    expect(withoutUsageMember('{"usage" : null ,"id":"c","n":1.50}')).toBe('{"id":"c","n":1.50}');
    expect(withoutUsageMember('{"usage":null,"id":"c","usage":{"total_tokens":3}}')).toBe('{"id":"c"}');
    expect(withoutUsageMember('{"usage":{"total_tokens":3},"id":"c","usage":null}')).toBe('{"id":"c"}');
    expect(withoutUsageMember('{"usage":null}  ')).toBe('{}  ');
    // not top-level: kept as sent
    const nested = '{"choices":[{"delta":{"usage":null}}],"id":"c"}';
    expect(withoutUsageMember(nested)).toBe(nested);
    const inText = '{"choices":[{"delta":{"content":"a,\\"usage\\":null}"}}]}';
    expect(withoutUsageMember(inText)).toBe(inText);
    const notJson = '{"usage":null,';
    expect(withoutUsageMember(notJson)).toBe(notJson);
    expect(withoutUsageMember('[DONE]')).toBe('[DONE]');
    // through the stripper: an event's data lines are one value, joined by LF (the SSE spec), so
    // a member split across them is found (fresh-user finding: `"usage":null}` on a line of its
    // own passed); a comment line is kept
    expect(run([Buffer.from(': keep-alive "usage"\ndata: {"usage":null,\ndata: "id":"c"}\n\n')])).toBe(': keep-alive "usage"\ndata: {"id":"c"}\n\n');
    const split = 'data: {"id":"c1","choices":[{"index":0,\r\ndata: "delta":{"content":"ml"}}],\r\ndata: "usage":null}\r\n\r\n';
    const want = 'data: {"id":"c1","choices":[{"index":0,\r\ndata: "delta":{"content":"ml"}}]}\r\n\r\n';
    expect(run([Buffer.from(split + DONE)])).toBe(want + DONE);
    for (let cut = 0; cut <= split.length; cut++) expect(run([Buffer.from(split.slice(0, cut)), Buffer.from(split.slice(cut))]), `cut ${cut}`).toBe(want);
    // several data lines none of which names a usage member of the value: as sent
    const two = 'data: {"choices":[],\ndata: "id":"usage"}\n\n';
    expect(run([Buffer.from(two)])).toBe(two);
  });

  it("a usage-only event without a choices member (some OpenAI-compatible servers') is dropped too", () => {
    expect(run([Buffer.from(A + 'data: {"id":"c","usage":{"prompt_tokens":9,"completion_tokens":2}}\n\n' + DONE)])).toBe(A0 + DONE);
    // an event without choices and without usage figures is not a usage chunk
    const err = 'data: {"error":{"message":"x"},"usage":null}\n\n';
    expect(run([Buffer.from(err)])).toBe('data: {"error":{"message":"x"}}\n\n');
  });

  it('CR-only and mixed line ends (the SSE spec allows CRLF, LF and CR): each event passes as it completes, the usage event dropped, wherever the chunks are cut', () => {
    const cr = (t: string) => t.replace(/\n/g, '\r');
    for (const [events, name] of [
      [[cr(A), cr(B), cr(USAGE), cr(DONE)], 'CR'],
      [[A.replace('\n\n', '\r\n\n'), B.replace('\n\n', '\n\r\n'), USAGE.replace('\n\n', '\r\r'), DONE], 'mixed'],
      [[A, B.replace('\n\n', '\r\r\n'), USAGE.replace('\n\n', '\r\r\n'), DONE], 'CR then CRLF'],
    ] as const) {
      const all = Buffer.from(events.join(''));
      const stripped = (e: string) => e.replace(',"usage":null}', '}');
      const want = stripped(events[0]) + stripped(events[1]) + events[3];
      for (let cut = 0; cut <= all.length; cut++) expect(run([all.subarray(0, cut), all.subarray(cut)]), `${name}, cut ${cut}`).toBe(want);
      // every byte its own chunk: an event held over many chunks, its blank line split across two
      expect(run([...all].map((b) => Buffer.from([b]))), `${name}, byte by byte`).toBe(want);
      // streamed, not held to the end: the first event is out as soon as it is whole
      const t = usageChunkStripper();
      expect(t.push(Buffer.from(events[0] + events[1].slice(0, 10))).toString('utf8'), name).toBe(stripped(events[0]));
    }
  });

  it('a whole body (scripted model) stays a body, without the usage event and without content-length', () => {
    const r = stripUsageChunks({ status: 200, headers: { 'content-type': 'text/event-stream', 'content-length': '5' }, body: Buffer.from(A + USAGE + DONE) });
    expect(r.stream).toBeUndefined();
    expect(r.headers).toEqual({ 'content-type': 'text/event-stream' });
    expect(r.body!.toString('utf8')).toBe(A0 + DONE);
  });
});
