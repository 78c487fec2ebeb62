import type { JobRow } from '../../store/types.js';
import { jsonReply, type Reply } from '../reply.js';
import { toResponse } from '../web-adapter.js';
import type { MessagesRequest } from '../request.js';
import { workingDirectoryOf } from '../request.js';
import { fillPlaceholders, type ModelScript, type ScriptBlock, type ScriptUsage } from '../script.js';

/** Text answered once the script has no turn left. */
export const SCRIPT_FINISHED_TEXT = '(scripted model: script finished)';

/**
 * The gateway's refusal (HTTP 400, not retried) when the scripted model has no script for the
 * job's agent: the job fails with this message instead of "succeeding" without a model. It
 * names both ways out, for the scripted provider serves `model` either by a route or as the
 * default of a server without a key (it told a server with ANTHROPIC_API_KEY set, whose route
 * sent the model to `scripted`, to set the key: fresh-tester finding).
 */
export function noScriptMessage(agent: string, model: string): string {
  return `scripted model: no script for agent "${agent}", and model ${JSON.stringify(model)} is served by the scripted provider. Add a script.yaml beside the agent's agent.yaml (the folder it was loaded from: agents/${agent}/ or the --agents folder), or send the model to a real provider: a route (flotilla models set PATTERN PROVIDER), or, with no route for it, the server's default, which is a real model once ANTHROPIC_API_KEY (OPENAI_API_KEY for OpenAI formats) is set on the server.`;
}

/** A content block of an Anthropic Messages reply. */
type ReplyBlock = { type: 'text'; text: string } | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> };

/** The turn the scripted model plays back for one request. */
export interface ScriptedReply {
  /** 0-based index of the script turn (= number of assistant messages the model played in the request), or -1 when none was played. */
  turn: number;
  model: string;
  content: ReplyBlock[];
  stopReason: 'end_turn' | 'tool_use';
  usage: Required<ScriptUsage>;
}

const ZERO_USAGE: Required<ScriptUsage> = { input_tokens: 0, output_tokens: 0, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 };

/**
 * Claude Code's filler for an assistant turn that never came: resuming a session (`--resume`)
 * whose last request got no reply (a budget refusal, a stopped process), Claude Code 2.1 sends
 * the history with `Continue from where you left off.` after the last tool result and then an
 * assistant message of exactly this text, before the new prompt (observed against a fake
 * upstream). It is not a turn the model played.
 */
const NO_RESPONSE_FILLER = 'No response requested.';

/** True for an assistant message the model wrote (not Claude Code's {@link NO_RESPONSE_FILLER}). */
function playedTurn(m: MessagesRequest['messages'][number]): boolean {
  if (m.role !== 'assistant') return false;
  const c = m.content as unknown;
  const text = typeof c === 'string' ? c : Array.isArray(c) && c.length === 1 && (c[0] as { type?: unknown }).type === 'text' ? (c[0] as { text?: unknown }).text : null;
  return text !== NO_RESPONSE_FILLER;
}

/**
 * Picks and fills the reply for `request`: turn index = the number of `assistant` messages in
 * it that the model played (not Claude Code's filler on a resume: a budget top-up resuming a
 * session mid-script replayed the turn after the refused one, skipping a Read, and the job
 * "succeeded" without its fix — fresh-user finding), so a retried request gets the same turn. Past the last turn → {@link SCRIPT_FINISHED_TEXT};
 * no script → a text saying so. Both of those report zero usage. Output tokens are capped at
 * the request's `max_tokens` (the content is played whole). tool_use ids are
 * `toolu_<job>_<turn>_<n>`.
 */
export function scriptedReply(script: ModelScript | null, job: JobRow, request: MessagesRequest): ScriptedReply {
  const model = script?.model ?? request.model;
  if (!script) {
    const text = `(scripted model: no script for agent "${job.agent}". Add a script.yaml beside the agent's agent.yaml, or set ANTHROPIC_API_KEY on the server to use Claude.)`;
    return { turn: -1, model, content: [{ type: 'text', text }], stopReason: 'end_turn', usage: ZERO_USAGE };
  }
  const turn = request.messages.filter(playedTurn).length;
  const t = script.turns[turn];
  if (!t) return { turn: -1, model, content: [{ type: 'text', text: SCRIPT_FINISHED_TEXT }], stopReason: 'end_turn', usage: ZERO_USAGE };
  // a job that resumes another's session works in that job's workspace, on its branch (runner/workspace.ts reuseWorkspace)
  const ctx = { job: { id: job.id, branch: `flotilla/job-${job.workspaceJobId ?? job.id}` }, input: job.input, workspace: workingDirectoryOf(request) };
  let n = 0;
  const content = t.content.map((b: ScriptBlock): ReplyBlock => {
    if ('text' in b) return { type: 'text', text: fillPlaceholders(b.text, ctx) };
    n += 1;
    return { type: 'tool_use', id: `toolu_${job.id}_${turn}_${n}`, name: b.tool_use.name, input: fillPlaceholders(b.tool_use.input, ctx) };
  });
  const usage = { ...ZERO_USAGE, ...t.usage };
  // A real model stops at max_tokens: the reported (and charged) output never exceeds it, so
  // spend stays within the budget reservation, which counts max_tokens of output (budget.ts).
  if (request.max_tokens !== undefined && usage.output_tokens > request.max_tokens) usage.output_tokens = request.max_tokens;
  return { turn, model, content, stopReason: n > 0 ? 'tool_use' : 'end_turn', usage };
}

function messageId(job: JobRow, reply: ScriptedReply): string {
  return `msg_scripted_${job.id}_${reply.turn >= 0 ? reply.turn : 'x'}_${Date.now().toString(36)}`;
}

/** The non-streamed Messages reply body. */
export function replyJson(job: JobRow, reply: ScriptedReply): Record<string, unknown> {
  return {
    id: messageId(job, reply),
    type: 'message',
    role: 'assistant',
    model: reply.model,
    content: reply.content,
    stop_reason: reply.stopReason,
    stop_sequence: null,
    usage: reply.usage,
  };
}

/** Splits `s` into up to `parts` non-empty pieces (at code point boundaries). */
function pieces(s: string, parts: number): string[] {
  const cps = Array.from(s);
  if (cps.length === 0) return [''];
  const size = Math.ceil(cps.length / parts);
  const out: string[] = [];
  for (let i = 0; i < cps.length; i += size) out.push(cps.slice(i, i + size).join(''));
  return out;
}

/**
 * The reply as the exact Anthropic SSE sequence: message_start (usage with input/cache figures
 * and output_tokens ≤ 1), ping, per block content_block_start / deltas (text_delta, or the
 * tool input JSON as a few input_json_delta fragments) / content_block_stop, message_delta
 * (stop_reason + final cumulative usage), message_stop.
 */
export function replySse(job: JobRow, reply: ScriptedReply): string {
  const ev = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const u = reply.usage;
  let out = ev('message_start', {
    message: {
      id: messageId(job, reply),
      type: 'message',
      role: 'assistant',
      model: reply.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...u, output_tokens: Math.min(1, u.output_tokens) },
    },
  });
  out += ev('ping', {});
  reply.content.forEach((b, index) => {
    if (b.type === 'text') {
      out += ev('content_block_start', { index, content_block: { type: 'text', text: '' } });
      for (const p of pieces(b.text, 3)) out += ev('content_block_delta', { index, delta: { type: 'text_delta', text: p } });
    } else {
      out += ev('content_block_start', { index, content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} } });
      for (const p of pieces(JSON.stringify(b.input), 3)) out += ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: p } });
    }
    out += ev('content_block_stop', { index });
  });
  out += ev('message_delta', { delta: { stop_reason: reply.stopReason, stop_sequence: null }, usage: u });
  out += ev('message_stop', {});
  return out;
}

/**
 * Serves one request from the script: SSE (`text/event-stream`, the whole sequence as one
 * body) when `request.stream` is true, else JSON. Never touches the network.
 */
export function scriptedMessagesReply(script: ModelScript | null, job: JobRow, request: MessagesRequest): Reply {
  const reply = scriptedReply(script, job, request);
  if (request.stream) {
    return { status: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' }, body: Buffer.from(replySse(job, reply)) };
  }
  return jsonReply(200, replyJson(job, reply));
}

/** {@link scriptedMessagesReply} as a web `Response`. */
export function scriptedResponse(script: ModelScript | null, job: JobRow, request: MessagesRequest): Response {
  return toResponse(scriptedMessagesReply(script, job, request));
}
