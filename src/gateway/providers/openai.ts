import type { IncomingHttpHeaders } from 'node:http';
import { upstreamRequest } from '../upstream-http.js';
import { chunksOf, type Reply } from '../reply.js';
import { DROP_REQUEST, filtered, proxiedReply } from './anthropic.js';

/**
 * The `openai` and `openai-compatible` providers: forward a Chat Completions or Responses
 * request to `baseUrl` (which includes the version, e.g. https://api.openai.com/v1 or a local
 * llama.cpp/Ollama `http://127.0.0.1:8080/v1`) with the server's key as `Authorization:
 * Bearer`, the body streaming back untouched. Hop-by-hop headers and the job token are dropped.
 */
export interface OpenAiForward {
  baseUrl: string;
  /** ONE upstream key (a KeyRing's `take()`); empty = send none (local servers). */
  apiKey: string;
  /** `/chat/completions` or `/responses`. */
  path: string;
  headers: IncomingHttpHeaders | Headers;
  body: Uint8Array;
  signal?: AbortSignal;
}

/** @throws the connection error when the upstream cannot be reached. */
export async function forwardOpenAi(req: OpenAiForward): Promise<Reply> {
  const incoming = req.headers instanceof Headers ? Object.fromEntries(req.headers) : req.headers;
  const headers = filtered(incoming, DROP_REQUEST);
  if (req.apiKey) headers['authorization'] = `Bearer ${req.apiKey}`;
  return proxiedReply(await upstreamRequest(req.baseUrl + req.path, { method: 'POST', headers, body: req.body, ...(req.signal ? { signal: req.signal } : {}) }));
}

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

async function* withoutUsageChunks(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  const decoder = new TextDecoder();
  let buf = '';
  for await (const chunk of chunks) {
    buf += decoder.decode(chunk, { stream: true });
    let out = '';
    for (;;) {
      const m = /\r?\n\r?\n/.exec(buf);
      if (!m) break;
      const event = buf.slice(0, m.index + m[0].length);
      buf = buf.slice(m.index + m[0].length);
      if (!isUsageOnly(event)) out += event;
    }
    if (out) yield Buffer.from(out);
  }
  buf += decoder.decode();
  if (buf && !isUsageOnly(buf)) yield Buffer.from(buf);
}

/**
 * Chat Completions streaming: the gateway asks the upstream for usage when the client did not
 * (`stream_options.include_usage: true`) and removes the usage-only chunk (`choices: []` with
 * `usage`) from what the client sees; every other event passes through as it arrives.
 */
export function stripUsageChunks(res: Reply): Reply {
  if (!res.stream && !res.body) return res;
  const headers = { ...res.headers };
  delete headers['content-length'];
  return { status: res.status, headers, body: null, stream: withoutUsageChunks(chunksOf(res)) };
}
