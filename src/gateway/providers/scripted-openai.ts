import type { JobRow } from '../../store/types.js';
import { jsonReply, type Reply } from '../reply.js';
import type { ModelScript } from '../script.js';
import type { OpenAiApi } from '../openai-wire.js';
import type { MessagesRequest } from '../request.js';
import { scriptedReply, type ScriptedReply } from './scripted.js';

/**
 * The scripted model answering in the OpenAI wire formats (same script and turn rule as the
 * Messages one): Chat Completions (`chat.completion` JSON, or `chat.completion.chunk` SSE ending
 * in `data: [DONE]`, with a final usage chunk only when `includeUsage`) and Responses
 * (`response` JSON, or the `response.created` … `response.completed` SSE sequence Codex needs).
 * Usage: prompt/input tokens = input + cache read + cache write (OpenAI counts cached tokens
 * inside), cached = cache read.
 */

function openAiUsage(r: ScriptedReply) {
  const u = r.usage;
  const prompt = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;
  return { prompt, cached: u.cache_read_input_tokens, output: u.output_tokens };
}

function chatMessage(reply: ScriptedReply) {
  const text = reply.content.filter((b) => b.type === 'text').map((b) => (b as { text: string }).text).join('\n');
  const calls = reply.content.filter((b) => b.type === 'tool_use') as Array<{ id: string; name: string; input: Record<string, unknown> }>;
  return {
    role: 'assistant',
    content: text || null,
    ...(calls.length ? { tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.input) } })) } : {}),
  };
}

function chatJson(job: JobRow, reply: ScriptedReply) {
  const u = openAiUsage(reply);
  const msg = chatMessage(reply);
  return {
    id: `chatcmpl-scripted-${job.id}-${reply.turn}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: reply.model,
    choices: [{ index: 0, message: msg, finish_reason: msg.tool_calls ? 'tool_calls' : 'stop' }],
    usage: { prompt_tokens: u.prompt, completion_tokens: u.output, total_tokens: u.prompt + u.output, prompt_tokens_details: { cached_tokens: u.cached } },
  };
}

function chatSse(job: JobRow, reply: ScriptedReply, includeUsage: boolean): string {
  const base = { id: `chatcmpl-scripted-${job.id}-${reply.turn}`, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: reply.model };
  const line = (o: object) => `data: ${JSON.stringify({ ...base, ...o })}\n\n`;
  const msg = chatMessage(reply);
  let out = line({ choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] });
  if (msg.content) out += line({ choices: [{ index: 0, delta: { content: msg.content }, finish_reason: null }] });
  (msg.tool_calls ?? []).forEach((tc, index) => {
    out += line({ choices: [{ index: 0, delta: { tool_calls: [{ index, id: tc.id, type: 'function', function: { name: tc.function.name, arguments: '' } }] }, finish_reason: null }] });
    out += line({ choices: [{ index: 0, delta: { tool_calls: [{ index, function: { arguments: tc.function.arguments } }] }, finish_reason: null }] });
  });
  out += line({ choices: [{ index: 0, delta: {}, finish_reason: msg.tool_calls ? 'tool_calls' : 'stop' }] });
  if (includeUsage) {
    const u = openAiUsage(reply);
    out += line({ choices: [], usage: { prompt_tokens: u.prompt, completion_tokens: u.output, total_tokens: u.prompt + u.output, prompt_tokens_details: { cached_tokens: u.cached } } });
  }
  return out + 'data: [DONE]\n\n';
}

function responseItems(reply: ScriptedReply) {
  return reply.content.map((b, i) =>
    b.type === 'text'
      ? { type: 'message', id: `msg_${reply.turn}_${i}`, status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: b.text, annotations: [] }] }
      : { type: 'function_call', id: `fc_${reply.turn}_${i}`, status: 'completed', call_id: b.id, name: b.name, arguments: JSON.stringify(b.input) },
  );
}

function responseJson(job: JobRow, reply: ScriptedReply, status: 'in_progress' | 'completed') {
  const u = openAiUsage(reply);
  return {
    id: `resp_scripted_${job.id}_${reply.turn}`,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status,
    model: reply.model,
    output: status === 'completed' ? responseItems(reply) : [],
    usage:
      status === 'completed'
        ? { input_tokens: u.prompt, input_tokens_details: { cached_tokens: u.cached }, output_tokens: u.output, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: u.prompt + u.output }
        : null,
  };
}

function responsesSse(job: JobRow, reply: ScriptedReply): string {
  let seq = 0;
  const ev = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`;
  let out = ev('response.created', { response: responseJson(job, reply, 'in_progress') });
  out += ev('response.in_progress', { response: responseJson(job, reply, 'in_progress') });
  responseItems(reply).forEach((item, output_index) => {
    if (item.type === 'message') {
      out += ev('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', content: [] } });
      const text = (item.content as Array<{ text: string }>)[0]!.text;
      out += ev('response.content_part.added', { output_index, item_id: item.id, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } });
      out += ev('response.output_text.delta', { output_index, item_id: item.id, content_index: 0, delta: text });
      out += ev('response.output_text.done', { output_index, item_id: item.id, content_index: 0, text });
      out += ev('response.content_part.done', { output_index, item_id: item.id, content_index: 0, part: { type: 'output_text', text, annotations: [] } });
    } else {
      out += ev('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', arguments: '' } });
      out += ev('response.function_call_arguments.delta', { output_index, item_id: item.id, delta: item.arguments });
      out += ev('response.function_call_arguments.done', { output_index, item_id: item.id, arguments: item.arguments });
    }
    out += ev('response.output_item.done', { output_index, item });
  });
  out += ev('response.completed', { response: responseJson(job, reply, 'completed') });
  return out;
}

/** Serves one OpenAI-format request from the script (never touches the network). */
export function scriptedOpenAiReply(api: OpenAiApi, script: ModelScript | null, job: JobRow, asMessages: MessagesRequest, stream: boolean, includeUsage: boolean): Reply {
  const reply = scriptedReply(script, job, asMessages);
  const sse = (text: string): Reply => ({ status: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' }, body: Buffer.from(text) });
  if (api === 'openai-chat') return stream ? sse(chatSse(job, reply, includeUsage)) : jsonReply(200, chatJson(job, reply));
  return stream ? sse(responsesSse(job, reply)) : jsonReply(200, responseJson(job, reply, 'completed'));
}
