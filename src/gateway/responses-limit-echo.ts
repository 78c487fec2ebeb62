import { applyEdits, findNodeAtLocation, modify, parseTree, type ParseError } from 'jsonc-parser';
import { ChunkStream } from './chunk-stream.js';
import { isEventStream, type Reply } from './reply.js';
import { editEventData, perEvent, sseEventStep } from './sse-event-step.js';

/**
 * OpenAI Responses echoes the request's `max_output_tokens` in its response object: the
 * non-streamed body's top-level member, and the `response` of the stream's lifecycle events
 * (`response.created`, `response.in_progress`, `response.completed`, `response.incomplete`,
 * `response.failed`, `response.queued`: platform.openai.com/docs/api-reference/responses).
 * When the gateway set that limit itself — the client sent none (Codex sends none), or one past
 * the model's maximum output (openai-routes.ts, max-output.ts) — the client read the gateway's
 * figure back (`32000` where it sent none). {@link withClientLimitEcho} puts the client's own
 * back (`null` for none), so the reply says what the client asked for, as a text edit
 * (jsonc-parser): every other byte is the upstream's.
 */

const MEMBER = '"max_output_tokens"';

/** `json` with the number at `path` set to `value`; as it is when that is not a number, or `json` is not one JSON object. */
function withNumberAt(json: string, path: string[], value: number | null): string {
  if (!json.includes(MEMBER)) return json;
  const errors: ParseError[] = [];
  const tree = parseTree(json, errors, { allowTrailingComma: false, disallowComments: true });
  if (tree?.type !== 'object' || errors.length > 0) return json;
  const node = findNodeAtLocation(tree, path);
  if (node?.type !== 'number') return json;
  return applyEdits(json, modify(json, path, value, {}));
}

const RESPONSE_LIMIT = ['response', 'max_output_tokens'];

/** Whole SSE events with each event's `response.max_output_tokens` set to `value` (`out`: the same buffer when none names it). */
const eventsWithLimit = (value: number | null) =>
  perEvent(MEMBER, (event) => (event.includes(MEMBER) ? editEventData(event, (data) => withNumberAt(data, RESPONSE_LIMIT, value)) : event));

/**
 * `res` (a Responses reply) with the `max_output_tokens` it echoes set back to the client's
 * `value` (null: the client sent none): a JSON body's top-level member, or each event's
 * `response` member, chunk by chunk as the stream passes (sse-event-step.ts). Anything else
 * (an error body without the member, a body that is not JSON) passes unchanged.
 */
export function withClientLimitEcho(res: Reply, value: number | null): Reply {
  if (!res.stream && !res.body) return res;
  const headers = { ...res.headers };
  delete headers['content-length'];
  if (res.stream) return { status: res.status, headers, body: null, stream: ChunkStream.from(res.stream).through(sseEventStep(eventsWithLimit(value))) };
  const body = res.body!;
  if (body.indexOf(MEMBER) < 0) return res;
  if (isEventStream(res)) return { status: res.status, headers, body: eventsWithLimit(value)(body).out };
  const text = body.toString('utf8');
  const edited = withNumberAt(text, ['max_output_tokens'], value);
  return edited === text ? res : { status: res.status, headers, body: Buffer.from(edited) };
}
