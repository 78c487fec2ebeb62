import type { IncomingHttpHeaders } from 'node:http';
import { upstreamRequest } from '../upstream-http.js';
import type { CallSignal, Reply } from '../reply.js';
import { asJsonBody, DROP_REQUEST, filtered, proxiedReply } from './anthropic.js';

/**
 * The `openai` and `openai-compatible` providers: forward a Chat Completions or Responses
 * request to `baseUrl` (which includes the version, e.g. https://api.openai.com/v1 or a local
 * llama.cpp/Ollama `http://127.0.0.1:8080/v1`) with the server's key as `Authorization:
 * Bearer`, the body streaming back untouched. Hop-by-hop headers and the job token are dropped;
 * a content-type that is not JSON goes as `application/json` (anthropic.ts asJsonBody).
 */
export interface OpenAiForward {
  baseUrl: string;
  /** ONE upstream key (a KeyRing's `take()`); empty = send none (local servers). */
  apiKey: string;
  /** `/chat/completions` or `/responses`, with the client's query when it sent one (`?api-version=...`). */
  path: string;
  headers: IncomingHttpHeaders | Headers;
  body: Uint8Array;
  signal?: CallSignal;
}

/** @throws the connection error when the upstream cannot be reached. */
export async function forwardOpenAi(req: OpenAiForward): Promise<Reply> {
  const incoming = req.headers instanceof Headers ? Object.fromEntries(req.headers) : req.headers;
  const headers = filtered(incoming, DROP_REQUEST);
  if (req.apiKey) headers['authorization'] = `Bearer ${req.apiKey}`;
  asJsonBody(headers);
  return proxiedReply(await upstreamRequest(req.baseUrl + req.path, { method: 'POST', headers, body: req.body, ...(req.signal ? { signal: req.signal } : {}) }));
}

