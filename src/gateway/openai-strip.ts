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
    .split(/\r\n|\n|\r/)
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
// A blank line: two line ends, each CRLF, LF or CR (the SSE spec's three; a CR before an LF is
// the CRLF, not a line end of its own). A CR last in a buffer counts as one: when an LF follows
// in the next chunk, usageChunkStripper hands it on with the event before (or drops it with it).
const BOUNDARY = /(?:\r\n|\n|\r(?!\n))(?:\r\n|\n|\r(?!\n))/g;

/**
 * `events` (whole events, UTF-8) without the usage-only ones (`out`: the same buffer when none
 * is); `lastDropped`: the last event was one.
 */
function withoutUsage(events: Buffer): { out: Buffer; lastDropped: boolean } {
  if (events.indexOf('"choices"') < 0 || !EMPTY_CHOICES.test(events.toString('latin1'))) return { out: events, lastDropped: false };
  const text = events.toString('utf8');
  let out = '';
  let from = 0;
  let lastDropped = false;
  for (const m of text.matchAll(BOUNDARY)) {
    const event = text.slice(from, m.index + m[0].length);
    from = m.index + m[0].length;
    lastDropped = isUsageOnly(event);
    if (!lastDropped) out += event;
  }
  const rest = text.slice(from);
  if (rest) {
    lastDropped = isUsageOnly(rest);
    if (!lastDropped) out += rest;
  }
  return { out: Buffer.from(out), lastDropped };
}

/** End of the last blank line (event boundary) in `b`, or 0 when it has none. */
function lastBoundaryEnd(b: Buffer): number {
  if (b.indexOf(13) < 0) {
    // LF only (the common case): no regex, one search back for the blank line
    const lf = b.lastIndexOf('\n\n');
    return lf < 0 ? 0 : lf + 2;
  }
  let end = 0;
  for (const m of b.toString('latin1').matchAll(BOUNDARY)) end = m.index + m[0].length;
  return end;
}

const LF = Buffer.from('\n');

/**
 * A per-stream step (chunk-stream.ts) removing usage-only events; holds an unfinished event.
 * An event cut off after a CR last in a chunk goes out at once; when the next chunk starts
 * with the LF of that CRLF, the LF goes out with it (or is dropped with it, when the event was
 * the usage one): the bytes are the upstream's, less the usage event.
 */
export function usageChunkStripper(): ChunkTransform {
  // the unfinished event held: its pieces (joined once, when a blank line may have come: one
  // 40 MB event was quadratic when every chunk re-joined and re-searched it, fresh-user finding)
  let held: Buffer[] = [];
  // its last (up to) 3 bytes: a blank line (at most 4 bytes) can begin there and end in the next chunk
  let heldTail: Buffer = EMPTY;
  // the part last handed on ended with a CR: 'kept' or 'dropped' (the usage event), else null
  let afterCr: 'kept' | 'dropped' | null = null;
  const hold = (b: Buffer): void => {
    held.push(b);
    heldTail = b.length >= 3 ? b.subarray(b.length - 3) : Buffer.concat([heldTail, b]).subarray(-3);
  };
  return {
    push: (c) => {
      if (held.length > 0 && lastBoundaryEnd(Buffer.concat([heldTail, c])) === 0) {
        // no blank line has ended in this chunk (the held part has none of its own): hold on
        hold(Buffer.from(c));
        return EMPTY;
      }
      let buf = held.length > 0 ? Buffer.concat([...held, c]) : c;
      held = [];
      heldTail = EMPTY;
      let lf = false;
      if (afterCr !== null && buf.length > 0) {
        if (buf[0] === 10) {
          lf = afterCr === 'kept';
          buf = buf.subarray(1);
        }
        afterCr = null;
      }
      const end = lastBoundaryEnd(buf);
      if (end < buf.length) hold(Buffer.from(buf.subarray(end)));
      if (end === 0) return lf ? LF : EMPTY;
      const { out, lastDropped } = withoutUsage(end === buf.length ? buf : buf.subarray(0, end));
      if (buf[end - 1] === 13) afterCr = lastDropped ? 'dropped' : 'kept';
      return lf ? Buffer.concat([LF, out]) : out;
    },
    end: () => {
      const rest = held.length > 0 ? Buffer.concat(held) : null;
      held = [];
      heldTail = EMPTY;
      return rest ? withoutUsage(rest).out : EMPTY;
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
