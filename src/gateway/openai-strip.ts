import { ChunkStream, type ChunkTransform } from './chunk-stream.js';
import type { Reply } from './reply.js';

/**
 * Chat Completions streaming: the gateway asks the upstream for usage when the client did not
 * (`stream_options.include_usage: true`, openai-routes.ts) and removes the usage-only chunk
 * (`choices: []` with `usage`) from what the client sees; every other event passes through as
 * it arrives, whole (an event is held until its blank line has arrived).
 *
 * Cost: per chunk one search for the last event boundary and one for `"choices"`; an event is
 * decoded and JSON-parsed only when its chunk has an empty `choices` array (the usage chunk).
 */

/** True for a Chat Completions usage-only event (`choices: []` with `usage`). */
function isUsageOnly(event: string): boolean {
  const data = event
    .split(/\r?\n/)
    .filter((l) => l.startsWith('data:'))
    .map((l) => l.slice(5).trimStart())
    .join('\n');
  if (!data || data === '[DONE]') return false;
  try {
    const j = JSON.parse(data) as { choices?: unknown[]; usage?: unknown };
    return Array.isArray(j.choices) && j.choices.length === 0 && j.usage !== null && j.usage !== undefined;
  } catch {
    return false;
  }
}

const EMPTY = Buffer.alloc(0);
const EMPTY_CHOICES = /"choices"\s*:\s*\[\s*\]/;
const BOUNDARY = /\r?\n\r?\n/g;

/** `events` (whole events, UTF-8) without the usage-only ones; the same buffer when none is. */
function withoutUsage(events: Buffer): Buffer {
  if (events.indexOf('"choices"') < 0 || !EMPTY_CHOICES.test(events.toString('latin1'))) return events;
  const text = events.toString('utf8');
  let out = '';
  let from = 0;
  for (const m of text.matchAll(BOUNDARY)) {
    const event = text.slice(from, m.index + m[0].length);
    from = m.index + m[0].length;
    if (!isUsageOnly(event)) out += event;
  }
  const rest = text.slice(from);
  if (rest && !isUsageOnly(rest)) out += rest;
  return Buffer.from(out);
}

/** End of the last blank line (event boundary) in `b`, or 0 when it has none. */
function lastBoundaryEnd(b: Buffer): number {
  const lf = b.lastIndexOf('\n\n');
  const crlf = b.lastIndexOf('\n\r\n');
  return Math.max(lf < 0 ? 0 : lf + 2, crlf < 0 ? 0 : crlf + 3);
}

/** A per-stream step (chunk-stream.ts) removing usage-only events; holds an unfinished event. */
export function usageChunkStripper(): ChunkTransform {
  let carry: Buffer | null = null;
  return {
    push: (c) => {
      const buf = carry ? Buffer.concat([carry, c]) : c;
      const end = lastBoundaryEnd(buf);
      carry = end < buf.length ? Buffer.from(buf.subarray(end)) : null;
      return end === 0 ? EMPTY : withoutUsage(end === buf.length ? buf : buf.subarray(0, end));
    },
    end: () => {
      const rest = carry;
      carry = null;
      return rest ? withoutUsage(rest) : EMPTY;
    },
  };
}

/** The reply without its usage-only events: a whole body at once, a stream chunk by chunk. */
export function stripUsageChunks(res: Reply): Reply {
  if (!res.stream && !res.body) return res;
  const headers = { ...res.headers };
  delete headers['content-length'];
  if (!res.stream) {
    const t = usageChunkStripper();
    const head = t.push(res.body!);
    const tail = t.end!();
    return { status: res.status, headers, body: tail.length ? Buffer.concat([head, tail]) : head };
  }
  return { status: res.status, headers, body: null, stream: ChunkStream.from(res.stream).through(usageChunkStripper()) };
}
