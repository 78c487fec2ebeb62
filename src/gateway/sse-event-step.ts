import type { ChunkTransform } from './chunk-stream.js';

const EMPTY = Buffer.alloc(0);
/**
 * A blank line: two line ends, each CRLF, LF or CR (the SSE spec's three, WHATWG HTML §9.2; a CR
 * before an LF is the CRLF, not a line end of its own). A CR last in a buffer counts as one: when
 * an LF follows in the next chunk, {@link sseEventStep} hands it on with the event before (or
 * drops it with it).
 */
export const SSE_BOUNDARY = /(?:\r\n|\n|\r(?!\n))(?:\r\n|\n|\r(?!\n))/g;

/**
 * What an {@link sseEventStep} does to whole events: `events` (one or more whole SSE events,
 * UTF-8, each with its blank line) → `out`, the bytes to send in their place (the same buffer
 * when nothing changed), and `lastDropped`: the last event was removed (its line end split across
 * chunks goes with it).
 */
export type SseEventEdit = (events: Buffer) => { out: Buffer; lastDropped: boolean };

/**
 * An {@link SseEventEdit} applying `edit` to each whole event (its text, blank line included) of
 * a buffer that mentions `mention`; `edit` returning null drops the event. A buffer without
 * `mention` comes back as it is, not decoded (the common case: one search a chunk).
 */
export function perEvent(mention: string, edit: (event: string) => string | null): SseEventEdit {
  return (events) => {
    if (events.indexOf(mention) < 0) return { out: events, lastDropped: false };
    const text = events.toString('utf8');
    let out = '';
    let lastDropped = false;
    const take = (event: string) => {
      const e = edit(event);
      lastDropped = e === null;
      if (e !== null) out += e;
    };
    let from = 0;
    for (const m of text.matchAll(SSE_BOUNDARY)) {
      take(text.slice(from, m.index + m[0].length));
      from = m.index + m[0].length;
    }
    if (from < text.length) take(text.slice(from));
    return { out: Buffer.from(out), lastDropped };
  };
}

/** End of the last blank line (event boundary) in `b`, or 0 when it has none. */
function lastBoundaryEnd(b: Buffer): number {
  if (b.indexOf(13) < 0) {
    // LF only (the common case): no regex, one search back for the blank line
    const lf = b.lastIndexOf('\n\n');
    return lf < 0 ? 0 : lf + 2;
  }
  let end = 0;
  for (const m of b.toString('latin1').matchAll(SSE_BOUNDARY)) end = m.index + m[0].length;
  return end;
}

const LF = Buffer.from('\n');

/**
 * A per-stream step (chunk-stream.ts) handing `edit` whole SSE events as they complete (each
 * chunk's complete events at once, in one call) and holding an unfinished one until its blank
 * line arrives; what `edit` does not change goes on byte for byte.
 * An event cut off after a CR last in a chunk goes out at once; when the next chunk starts
 * with the LF of that CRLF, the LF goes out with it (or is dropped with it, when `edit` dropped
 * the event): the bytes are the upstream's, less what `edit` changed.
 */
export function sseEventStep(edit: SseEventEdit): ChunkTransform {
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
      const { out, lastDropped } = edit(end === buf.length ? buf : buf.subarray(0, end));
      if (buf[end - 1] === 13) afterCr = lastDropped ? 'dropped' : 'kept';
      return lf ? Buffer.concat([LF, out]) : out;
    },
    end: () => {
      const rest = held.length > 0 ? Buffer.concat(held) : null;
      held = [];
      heldTail = EMPTY;
      return rest ? edit(rest).out : EMPTY;
    },
  };
}


/**
 * `event` (one SSE event's text) with `edit` applied to its data. One data line is edited in
 * place (line ends kept). Several are one value, joined by LF (the SSE spec, WHATWG HTML §9.2):
 * a member split across them is found in the joined value, which, when edited, replaces the
 * first data line as `data: ` lines and the others are dropped (a tester found a `"usage":null`
 * on its own line passed through). An event `edit` leaves as it is comes back unchanged.
 */
export function editEventData(event: string, edit: (data: string) => string): string {
  // lines at even indexes, their ends (CRLF, LF or CR: the SSE spec's three) at odd ones
  const parts = event.split(/(\r\n|\n|\r)/);
  const data: number[] = [];
  for (let i = 0; i < parts.length; i += 2) if (parts[i]!.startsWith('data:')) data.push(i);
  const from = (line: string) => (line.charCodeAt(5) === 32 ? 6 : 5);
  if (data.length === 1) {
    const line = parts[data[0]!]!;
    parts[data[0]!] = line.slice(0, from(line)) + edit(line.slice(from(line)));
  } else if (data.length > 1) {
    const joined = data.map((i) => parts[i]!.slice(from(parts[i]!))).join('\n');
    const edited = edit(joined);
    if (edited === joined) return event;
    const eol = parts[data[0]! + 1] || '\n';
    parts[data[0]!] = edited
      .split('\n')
      .map((l) => `data: ${l}`)
      .join(eol);
    for (const i of data.slice(1)) parts[i] = parts[i + 1] = '';
  }
  return parts.join('');
}
