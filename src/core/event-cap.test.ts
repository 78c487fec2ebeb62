import { describe, expect, it } from 'vitest';
import { EventBody, MAX_EVENT_DATA_BYTES } from '../protocol/index.js';
import { capEvent, capJson, sizeText, truncationMarker } from './event-cap.js';

const MB = 1024 * 1024;
const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const MARKER = /… \[truncated \d+(\.\d)? (B|KiB|MiB)\]$/;

describe('capEvent (the per-event size cap)', () => {
  it('keeps an event that fits as the same object', () => {
    const e = { type: 'log', data: { stream: 'stdout', line: 'x'.repeat(40_000) }, rseq: 3, at: 'now' };
    expect(capEvent(e)).toBe(e);
    const big = { type: 'message', data: { role: 'assistant', text: 'y'.repeat(MAX_EVENT_DATA_BYTES - 100) } };
    expect(capEvent(big)).toBe(big);
  });

  it('cuts a 15 MB log line to the cap with a marker naming what was cut; the rest of the event is kept', () => {
    const line = 'a'.repeat(15_000_000);
    const e = { type: 'log' as const, data: { stream: 'stderr' as const, line }, rseq: 7, at: '2027-01-01T00:00:00.000Z' };
    const c = capEvent(e);
    expect(c).not.toBe(e);
    expect(e.data.line.length).toBe(15_000_000); // the input is not changed
    expect(c).toMatchObject({ type: 'log', rseq: 7, at: '2027-01-01T00:00:00.000Z', data: { stream: 'stderr' } });
    expect(bytes(c.data)).toBeLessThanOrEqual(MAX_EVENT_DATA_BYTES);
    expect(bytes(c.data)).toBeGreaterThan(MAX_EVENT_DATA_BYTES - 100);
    expect(c.data.line).toMatch(/^a+… \[truncated 14\.1 MiB\]$/);
    expect(EventBody.safeParse(c).success).toBe(true);
  });

  it('cuts only the output of a huge tool result and marks it truncated', () => {
    const e = { type: 'tool.result' as const, data: { id: 'toolu_1', name: 'Bash', output: 'z'.repeat(3 * MB), isError: false } };
    const c = capEvent(e);
    expect(c.data).toMatchObject({ id: 'toolu_1', name: 'Bash', isError: false, truncated: true });
    expect(c.data.output).toMatch(MARKER);
    expect(bytes(c.data)).toBeLessThanOrEqual(MAX_EVENT_DATA_BYTES);
    expect(EventBody.safeParse(c).success).toBe(true);
  });

  it('counts UTF-8 bytes and JSON escapes, and never leaves half a surrogate pair', () => {
    for (const unit of ['😀', 'é', '\u0001', '"']) {
      const c = capEvent({ type: 'message', data: { role: 'assistant', text: unit.repeat(400_000) } });
      expect(bytes(c.data)).toBeLessThanOrEqual(MAX_EVENT_DATA_BYTES);
      expect(bytes(c.data)).toBeGreaterThan(MAX_EVENT_DATA_BYTES - 200);
      expect(c.data.text).toMatch(MARKER);
      expect(c.data.text).not.toMatch(LONE_SURROGATE);
    }
  });

  it('shares the budget between several long strings and keeps the short ones whole', () => {
    const c = capEvent({ type: 'job.finished', data: { status: 'failed', reason: 'error', error: 'e'.repeat(2 * MB), result: { summary: 's'.repeat(2 * MB), branch: 'fix/x' } } });
    const d = c.data as { status: string; reason: string; error: string; result: { summary: string; branch: string } };
    expect(d).toMatchObject({ status: 'failed', reason: 'error', result: { branch: 'fix/x' } });
    expect(d.error).toMatch(MARKER);
    expect(d.result.summary).toMatch(MARKER);
    expect(Math.abs(d.error.length - d.result.summary.length)).toBeLessThan(1000);
    expect(bytes(d)).toBeLessThanOrEqual(MAX_EVENT_DATA_BYTES);
  });

  it('drops the tail of a huge array or object of small values, with a marker entry', () => {
    const arr = capEvent({ type: 'tool.call', data: { id: 't', name: 'Write', input: { points: Array.from({ length: 500_000 }, (_, i) => i) } } });
    const points = (arr.data.input as { points: unknown[] }).points;
    expect(points.slice(0, 3)).toEqual([0, 1, 2]);
    expect(points.at(-1)).toMatch(/^… \[truncated \d+ more items, \d+\.\d (KiB|MiB)\]$/);
    expect(bytes(arr.data)).toBeLessThanOrEqual(MAX_EVENT_DATA_BYTES);
    const wide = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`key${i}`, i]));
    const obj = capJson({ input: wide }, MAX_EVENT_DATA_BYTES) as { input: Record<string, unknown> };
    expect(obj.input.key0).toBe(0);
    expect(obj.input['…']).toMatch(/more keys/);
    expect(bytes(obj)).toBeLessThanOrEqual(MAX_EVENT_DATA_BYTES);
  });

  it('names sizes in binary units', () => {
    expect(sizeText(512)).toBe('512 B');
    expect(sizeText(3277)).toBe('3.2 KiB');
    expect(truncationMarker(14_790_000)).toBe('… [truncated 14.1 MiB]');
    expect(() => capEvent({ type: 'log', data: {} }, 10)).toThrow(/at least 1024/);
  });
});
