import type { Logger } from '../core/log.js';
import type { OpenAiUpstream } from './config.js';
import { modelNameProblem } from './request.js';

/** How long an upstream's model list is reused before it is asked again, ms. */
export const UPSTREAM_MODELS_TTL_MS = 60_000;
/** How long the gateway waits for an upstream's model list, ms. */
export const UPSTREAM_MODELS_TIMEOUT_MS = 3_000;
/** The most of a model list's body read, bytes (Ollama and llama.cpp lists are a few KiB). */
const MAX_LIST_BYTES = 1024 * 1024;
/** The most ids taken from one list. */
const MAX_IDS = 1000;

/**
 * The model ids an OpenAI-compatible upstream (llama.cpp, Ollama, vLLM, a company gateway)
 * lists at `GET {baseUrl}/models` (OpenAI's List Models shape, `{ data: [{ id }] }`, which
 * those servers answer), for the gateway's own `GET /v1/models` (list-models.ts): a local
 * server's model names are in no price table, and a route such as `qwen*` cannot be listed
 * (fresh-tester finding: a client discovering models through the gateway saw none).
 *
 * Asked with the upstream's first key as `Authorization: Bearer` (none when it has none), at
 * most once per {@link UPSTREAM_MODELS_TTL_MS} (one request in flight at a time), within
 * {@link UPSTREAM_MODELS_TIMEOUT_MS}; a redirect is not followed (it would carry the key
 * elsewhere). A failure (unreachable, not 2xx, not that shape, over 1 MiB) gives no ids, is
 * logged as a warning without the key or the reply's text, and is asked again after the TTL.
 * An id that is no valid model name (request.ts modelNameProblem: a call naming it would be
 * refused), or that holds one of the upstream's keys (the listing goes to jobs), is left out.
 */
export class UpstreamModels {
  private cached: { ids: string[]; at: number } | null = null;
  private loading: Promise<string[]> | null = null;

  constructor(
    private readonly upstream: OpenAiUpstream,
    private readonly log: Logger,
    private readonly ttlMs = UPSTREAM_MODELS_TTL_MS,
    private readonly timeoutMs = UPSTREAM_MODELS_TIMEOUT_MS,
    private readonly clock: () => number = Date.now,
  ) {}

  /** The listed ids (sorted, distinct), or none after a failure. Never rejects. */
  ids(): Promise<string[]> {
    const c = this.cached;
    if (c && this.clock() - c.at < this.ttlMs) return Promise.resolve(c.ids);
    this.loading ??= this.load().finally(() => (this.loading = null));
    return this.loading;
  }

  private async load(): Promise<string[]> {
    let ids: string[] = [];
    try {
      ids = await this.fetchIds();
    } catch (err) {
      this.log.warn('gateway: could not read the model list of the OpenAI-compatible upstream; GET /v1/models lists only the models the gateway knows', { url: `${this.upstream.baseUrl}/models`, error: (err as Error).message });
    }
    this.cached = { ids, at: this.clock() };
    return ids;
  }

  private async fetchIds(): Promise<string[]> {
    const key = this.upstream.apiKeys[0];
    const res = await fetch(`${this.upstream.baseUrl}/models`, {
      headers: { accept: 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
      redirect: 'manual',
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    if (res.status < 200 || res.status >= 300) {
      await res.body?.cancel().catch(() => undefined);
      throw new Error(`HTTP ${res.status}`);
    }
    const text = await readLimited(res, MAX_LIST_BYTES);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new Error('the reply is not JSON');
    }
    const data = (body as { data?: unknown } | null)?.data;
    if (!Array.isArray(data)) throw new Error('the reply has no `data` list');
    const ids = new Set<string>();
    for (const m of data) {
      const id = (m as { id?: unknown } | null)?.id;
      if (typeof id !== 'string' || modelNameProblem(id) !== null || this.upstream.apiKeys.some((k) => k !== '' && id.includes(k))) continue;
      ids.add(id);
      if (ids.size >= MAX_IDS) break;
    }
    return [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }
}

/** The body of `res` as UTF-8 text. @throws Error once it passes `limit` bytes (the rest is not read). */
async function readLimited(res: Response, limit: number): Promise<string> {
  const reader = res.body?.getReader();
  if (!reader) return '';
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      throw new Error(`the reply is over ${limit} bytes`);
    }
    parts.push(value);
  }
  return Buffer.concat(parts).toString('utf8');
}
