import { upstreamFetch } from '../upstream-http.js';
import { DROP_REQUEST, DROP_RESPONSE, filtered } from './anthropic.js';

/**
 * The `openai` and `openai-compatible` providers: forward a Chat Completions or Responses
 * request to `baseUrl` (which includes the version, e.g. https://api.openai.com/v1 or a local
 * llama.cpp/Ollama `http://127.0.0.1:8080/v1`) with the server's key as `Authorization:
 * Bearer`, the body streaming back untouched. Hop-by-hop headers and the job token are dropped.
 */
export interface OpenAiForward {
  baseUrl: string;
  /** Upstream key; empty = send none (local servers). */
  apiKey: string;
  /** `/chat/completions` or `/responses`. */
  path: string;
  headers: Headers;
  body: Uint8Array<ArrayBuffer>;
  signal?: AbortSignal;
}

/** @throws the fetch error when the upstream cannot be reached. */
export async function forwardToOpenAi(req: OpenAiForward): Promise<Response> {
  const headers = filtered(req.headers, DROP_REQUEST);
  if (req.apiKey) headers.set('authorization', `Bearer ${req.apiKey}`);
  const upstream = await upstreamFetch(req.baseUrl + req.path, { method: 'POST', headers, body: req.body, ...(req.signal ? { signal: req.signal } : {}) });
  const out = filtered(upstream.headers, DROP_RESPONSE);
  if ((out.get('content-type') ?? '').startsWith('text/event-stream')) {
    out.set('cache-control', 'no-cache');
    out.set('x-accel-buffering', 'no');
  }
  return new Response(upstream.body, { status: upstream.status, statusText: upstream.statusText, headers: out });
}

/**
 * Chat Completions streaming: the gateway asks the upstream for usage when the client did not
 * (`stream_options.include_usage: true`) and removes the usage-only chunk (`choices: []` with
 * `usage`) from what the client sees; every other event passes through as it arrives.
 */
export function stripUsageChunks(res: Response): Response {
  if (!res.body) return res;
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let buf = '';
  const isUsageOnly = (event: string): boolean => {
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
  };
  const body = res.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        buf += decoder.decode(chunk, { stream: true });
        let out = '';
        for (;;) {
          const m = /\r?\n\r?\n/.exec(buf);
          if (!m) break;
          const event = buf.slice(0, m.index + m[0].length);
          buf = buf.slice(m.index + m[0].length);
          if (!isUsageOnly(event)) out += event;
        }
        if (out) controller.enqueue(encoder.encode(out));
      },
      flush(controller) {
        buf += decoder.decode();
        if (buf && !isUsageOnly(buf)) controller.enqueue(encoder.encode(buf));
      },
    }),
  );
  return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
}
