import { applyEdits, modify, parseTree, type ParseError } from 'jsonc-parser';
import { ChunkStream, type ChunkTransform } from './chunk-stream.js';
import { editEventData, perEvent, sseEventStep } from './sse-event-step.js';
import type { Reply } from './reply.js';

/**
 * Chat Completions streaming: the gateway asks the upstream for usage when the client did not
 * (`stream_options.include_usage: true`, openai-routes.ts), and the client sees the stream it
 * would have got without asking. OpenAI's documented wire format: with `include_usage`, an
 * extra usage-only chunk (`choices: []` with `usage`) comes before `[DONE]` and "all other
 * chunks will also include a usage field, but with a null value"; without it, no chunk has a
 * `usage` field. So the usage-only event is removed, and so is the top-level `usage` member of
 * every other event's data (`"usage":null`, or a figure some OpenAI-compatible servers put on
 * a content chunk), as a text edit: every other byte is the upstream's. Each event passes
 * through as it arrives, whole (an event is held until its blank line has arrived).
 *
 * Cost: per chunk one search for the last event boundary and one for `"usage"`; a chunk naming
 * `usage` is decoded, its events' data lines edited (OpenAI's `,"usage":null}` ending by a
 * slice; other spellings through jsonc-parser), and a usage-only candidate JSON-parsed.
 */

const EMPTY_CHOICES = /"choices"\s*:\s*\[\s*\]/;

/**
 * True for a Chat Completions usage-only event: `usage` with `choices: []` (OpenAI's), or with
 * no `choices` at all (some OpenAI-compatible servers').
 */
function isUsageOnly(event: string): boolean {
  if (event.includes('"choices"') && !EMPTY_CHOICES.test(event)) return false; // no JSON.parse for the content events
  const data = event
    .split(/\r\n|\n|\r/)
    .filter((l) => l.startsWith('data:'))
    .map((l) => l.slice(5).trimStart())
    .join('\n');
  if (!data || data === '[DONE]') return false;
  try {
    const j = JSON.parse(data) as { choices?: unknown[]; usage?: unknown };
    return (j.choices === undefined || (Array.isArray(j.choices) && j.choices.length === 0)) && j.usage !== null && j.usage !== undefined;
  } catch {
    return false;
  }
}

/** OpenAI's own ending of a chunk's data when `include_usage` is on (a top-level member: see {@link withoutUsageMember}). */
const NULL_USAGE_TAIL = ',"usage":null}';

/**
 * `json` (one event's data) without its top-level `usage` member(s), other bytes unchanged; as
 * it is when it has none or is not a JSON object. The fast path: valid JSON ending in
 * `,"usage":null}` ends in a member of the top-level object (a `}` closing a nested object
 * would come before the last one, and the comma cannot end a string: `usage` would then be a
 * bare word). Text that is not one JSON object is left as it is.
 */
export function withoutUsageMember(json: string): string {
  if (!json.includes('"usage"')) return json;
  const end = json.trimEnd();
  if (end.endsWith(NULL_USAGE_TAIL)) {
    const cut = `${end.slice(0, -NULL_USAGE_TAIL.length)}}${json.slice(end.length)}`;
    // another usage member before it (given twice) is for the full edit below
    return cut.includes('"usage"') ? withoutUsageMember(cut) : cut;
  }
  // jsonc-parser reads past errors (comments, trailing commas, a cut object): not JSON, not edited
  const errors: ParseError[] = [];
  const tree = parseTree(json, errors, { allowTrailingComma: false, disallowComments: true });
  if (tree?.type !== 'object' || errors.length > 0) return json;
  let text = json;
  // a member given twice: each removed (a client reading either must not see usage)
  for (const m of tree.children ?? []) if (m.children?.[0]?.value === 'usage') text = applyEdits(text, modify(text, ['usage'], undefined, {}));
  return text;
}

/** `event` (one SSE event's text) with {@link withoutUsageMember} applied to its data (sse-event-step.ts editEventData). */
function stripUsageMembers(event: string): string {
  return event.includes('"usage"') ? editEventData(event, withoutUsageMember) : event;
}

/**
 * Whole events without the usage-only ones and without the `usage` member of the others (`out`:
 * the same buffer when no event names `usage`); `lastDropped`: the last event was a usage-only one.
 */
const withoutUsage = perEvent('"usage"', (event) => (isUsageOnly(event) ? null : stripUsageMembers(event)));

/**
 * A per-stream step (chunk-stream.ts) removing usage-only events and the other events' `usage`
 * members (sse-event-step.ts: whole events, an unfinished one held).
 */
export function usageChunkStripper(): ChunkTransform {
  return sseEventStep(withoutUsage);
}

/** The reply without its usage-only events and `usage` members: a whole body at once, a stream chunk by chunk. */
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
