import { webSearchMicros, type ModelPrice } from '../core/pricing.js';
import type { CallUsage } from './usage.js';

/**
 * Server-side web search (H4): a tool the provider runs itself and bills per request on top of
 * the tokens (Anthropic: $10 per 1,000 searches, reported as
 * `usage.server_tool_use.web_search_requests`; OpenAI Responses: per `web_search_call` output
 * item; OpenAI Chat Completions search models, `gpt-4o-search-preview`,
 * `gpt-4o-mini-search-preview` and `gpt-5-search-api`: one search on every request, reported
 * nowhere in the reply).
 * Its price is the model's `webSearch` (USD per 1,000, data/prices.json). This module reads how
 * many searches a request allows — what the reservation holds for them — and holds a reported
 * count to that bound. Web fetch has no per-request charge (its tokens are in the usage), so
 * it is not counted.
 */

/**
 * Searches reserved for a request that enables web search without a bound (no Anthropic
 * `max_uses`, no Responses `max_tool_calls`). Claude Code's WebSearch tool sends `max_uses: 8`;
 * a request allowing more and using them is charged what it used all the same (the reservation
 * was then an estimate, as its input estimate is), up to {@link WEB_SEARCHES_PER_OUTPUT_TOKEN}
 * per output token allowed.
 */
export const DEFAULT_WEB_SEARCH_USES = 10;

/**
 * Without a declared bound, the most searches charged per output token the call may write: the
 * model writes each search's query itself (a `server_tool_use` block, several output tokens),
 * so a report of more searches than output tokens is a broken or hostile upstream (H1).
 */
export const WEB_SEARCHES_PER_OUTPUT_TOKEN = 1;

/**
 * The web searches a request allows: `uses` to reserve for, `declared` when the request (or
 * the model) bounds them itself; `perCall` when the provider charges `uses` searches on every
 * call it serves whatever the reply says (Chat Completions search models: meter.ts
 * CallContext.searchesPerCall).
 */
export interface WebSearchBound {
  uses: number;
  declared: boolean;
  perCall?: boolean;
}

/**
 * OpenAI's Chat Completions search models (`gpt-4o-search-preview`,
 * `gpt-4o-mini-search-preview`, `gpt-5-search-api`, dated or not; any `-search-preview` or
 * `-search-api` name): they search the web before every answer and
 * OpenAI bills that search per request (the `webSearch` price), though the reply counts it
 * nowhere (no web_search_call items in Chat Completions).
 */
const CHAT_SEARCH_MODEL = /-search-(?:preview|api)(?:-\d{4}-\d{2}-\d{2})?$/;

/** True when `model` is a Chat Completions search model ({@link CHAT_SEARCH_MODEL}). */
export function isChatSearchModel(model: unknown): boolean {
  return typeof model === 'string' && CHAT_SEARCH_MODEL.test(model);
}

/** What a Chat Completions search model's call holds for its search: one, charged on every call. */
const ONE_SEARCH_PER_CALL: WebSearchBound = Object.freeze({ uses: 1, declared: true, perCall: true });

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isSearchTool = (t: unknown): t is Record<string, unknown> => isObject(t) && typeof t.type === 'string' && t.type.startsWith('web_search');
const count = (v: unknown): number | null => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : null);

/**
 * The web searches a request body allows, or null when it enables none.
 * - `anthropic-messages`: each tool whose `type` starts with `web_search` (`web_search_20250305`,
 *   later versions) allows its `max_uses`, or {@link DEFAULT_WEB_SEARCH_USES} (then not declared).
 * - `openai-responses`: a `tools` entry of type `web_search*` (`web_search`, `web_search_preview`)
 *   allows `max_tool_calls` (the bound on all built-in tool calls of the response), or the default
 *   (the other fee-bearing built-in tools: tool-fees.ts toolFeeBound).
 * - `openai-chat`: a search model's request ({@link isChatSearchModel}) one search, charged on
 *   every call (`perCall`); any other model null (Chat Completions has no web search tool).
 */
export function webSearchBound(body: unknown, api: string): WebSearchBound | null {
  if (api === 'openai-chat') return isObject(body) && isChatSearchModel(body.model) ? ONE_SEARCH_PER_CALL : null;
  if (!isObject(body) || !Array.isArray(body.tools)) return null;
  if (api === 'anthropic-messages') {
    let uses = 0;
    let declared = true;
    let any = false;
    for (const t of body.tools) {
      if (!isSearchTool(t)) continue;
      any = true;
      const max = count(t.max_uses);
      if (max === null) declared = false;
      uses += max ?? DEFAULT_WEB_SEARCH_USES;
    }
    return any ? { uses, declared } : null;
  }
  if (api === 'openai-responses') {
    if (!body.tools.some(isSearchTool)) return null;
    const max = count(body.max_tool_calls);
    return max === null ? { uses: DEFAULT_WEB_SEARCH_USES, declared: false } : { uses: max, declared: true };
  }
  return null;
}

/** What the reservation holds for `bound`'s searches at `price`, µ$ (each search rounded up to whole µ$). */
export function webSearchWorstMicros(price: ModelPrice, bound: WebSearchBound | null): number {
  return bound === null || bound.uses === 0 ? 0 : bound.uses * webSearchMicros(price);
}

/**
 * The most searches a call may be charged (H1: reported usage is not trusted past what the
 * request allows): none when the request enables no web search (`bound` null: no search tool,
 * not a search model — nothing was reserved for one, and a provider runs none then; a fresh
 * tester's upstream reporting 1,000 searches on a tool-less call was charged $1 on a $0.01
 * tree), a declared bound (`max_uses`, `max_tool_calls`) as given, else
 * {@link WEB_SEARCHES_PER_OUTPUT_TOKEN} per output token allowed (`maxOutputTokens`).
 */
export function webSearchCap(bound: WebSearchBound | null, maxOutputTokens: number): number {
  if (bound === null) return 0;
  return bound.declared ? bound.uses : Math.max(0, maxOutputTokens) * WEB_SEARCHES_PER_OUTPUT_TOKEN;
}

/** `u` with at least `n` web searches (no copy when it has them already). */
export function withCallSearches(u: CallUsage, n: number): CallUsage {
  return (u.webSearchRequests ?? 0) >= n ? u : { ...u, webSearchRequests: n };
}

/** `u` with its web searches at most `cap`, or null when they are within it (no copy: the common case). */
export function boundedSearches(u: CallUsage, cap: number): CallUsage | null {
  const n = u.webSearchRequests ?? 0;
  return n <= cap ? null : { ...u, webSearchRequests: Math.max(0, cap) };
}
