import { DEFAULT_WEB_SEARCH_USES, isChatSearchModel } from './server-tools.js';
import { IMAGE_TOKENS_BOUND } from './input-images.js';
import { URL_DOCUMENT_TOKENS, urlInput, type UrlInput } from './url-input.js';
import { inputTokensBound, MAX_REPORTED_TOKENS } from './usage.js';

/**
 * Input the provider bills that the request body does not carry. The gateway bounds reported
 * input by what a request can hold (usage.ts inputTokensBound: body bytes + slack + a bound per
 * image) — a defence against an upstream reporting impossible usage — and that bound is wrong
 * for two kinds of request:
 * - requests that reference state stored on the provider (a previous response, a conversation,
 *   a stored prompt, a file by id): their input has no bound the gateway can know, so they are
 *   refused ({@link storedStateRef}) before anything is reserved or forwarded;
 * - requests enabling server tools whose results enter the model's context (web search, web
 *   fetch, code execution, file search, MCP run by the provider): they are charged the input
 *   the provider reports, up to {@link MAX_REPORTED_TOKENS} input-side tokens in all
 *   ({@link reportedInputCap}), and reserve {@link serverInputAllowance} input tokens on top of
 *   the body's estimate. A call whose tools add more than that allowance is charged it all the
 *   same: it can overshoot its tree's budget by the input beyond the allowance;
 * - requests with images or documents the provider fetches by URL (url-input.ts): the same.
 * The rule between the first two: a reference is refused when the provider puts the stored
 * input into the prompt itself, past any bound the gateway can set before the call; stored
 * data a server tool reaches only through its own calls is allowed, its results charged as
 * reported (bounded by the tool's allowance and MAX_REPORTED_TOKENS) and its per-call fee
 * reserved (server-tools.ts, tool-fees.ts). So, on OpenAI Responses:
 * - `file_search` `vector_store_ids` are allowed: the chunks a search retrieves are input
 *   tokens in `usage`, and each call's fee is reserved and charged (tool-fees.ts);
 * - `code_interpreter` `container.file_ids` (files uploaded earlier) and a `container` id are
 *   allowed: the files sit in the container, not in the prompt; the model sees only what its
 *   code prints, a tool result like any other code run (same allowance, same cap), so they add
 *   nothing the code_interpreter tool did not already leave unbounded;
 * - a `file_id` content part (`input_file`, `input_image`) is refused: the provider reads the
 *   whole file into the prompt.
 */

/**
 * Input tokens reserved per server tool use when the request gives no bound of its own (Anthropic
 * web_fetch `max_content_tokens`): about what one search's results or one fetched page add to the
 * context — OpenAI bills a search of its mini models as a fixed block of 8,000 input tokens, and
 * a search's result pages or a fetched page's text are typically a few thousand tokens. A use
 * that adds more is charged what the provider reports (up to {@link MAX_REPORTED_TOKENS}).
 */
export const SERVER_INPUT_TOKENS_PER_USE = 10_000;

/** Uses reserved for a server tool whose request gives no `max_uses` / `max_tool_calls` (as web search fees are: server-tools.ts). */
export const DEFAULT_SERVER_TOOL_USES = DEFAULT_WEB_SEARCH_USES;

/** What a request's server tools may add to its input: `uses` tool uses reserved for, adding at most `tokens` input tokens in all (≤ {@link MAX_REPORTED_TOKENS}). */
export interface ServerInputAllowance {
  uses: number;
  tokens: number;
}

/** A reference to provider-stored state: the field (a dotted path into the body) and the refusal's text. */
export interface StoredStateRef {
  param: string;
  message: string;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const count = (v: unknown): number | null => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : null);
const present = (v: unknown): boolean => v !== undefined && v !== null;
const typeOf = (t: unknown): string => (isObject(t) && typeof t.type === 'string' ? t.type : '');

/** Anthropic server tools whose results the model reads (by `type` prefix; versions are dated suffixes). */
const ANTHROPIC_CONTENT_TOOLS = ['web_search_', 'web_fetch_', 'code_execution_'];
/** OpenAI Responses built-in tools whose results the model reads (by `type` prefix). */
const RESPONSES_CONTENT_TOOLS = ['web_search', 'file_search', 'code_interpreter', 'mcp'];

const WHY = 'the gateway meters what a request carries and cannot bound input stored on the provider';

/**
 * The first reference to provider-stored state in parsed body `body` of wire format `api`, or
 * null (the common case; only message content blocks are looked at, not the whole body):
 * - `openai-responses`: a non-null `previous_response_id`, `conversation` or `prompt` (a stored
 *   prompt); an `item_reference` input item; a content part (of a message or a function call's
 *   output) with a `file_id` (`input_file`, `input_image`);
 * - `openai-chat`: a `file` content part with `file.file_id`;
 * - `anthropic-messages` (and count_tokens): a content block whose `source` is
 *   `{ type: "file", file_id }` (document, image; inside a tool_result too).
 * Not refused (module docstring: server tools reach them through their calls): `file_search`
 * `vector_store_ids`, `code_interpreter` `container.file_ids` and container ids, and Anthropic's
 * `container_upload` block (a stored file put into the code execution tool's container: the
 * model sees only what its code prints, charged as that tool's results are).
 * The refusal (400 invalid_request_error) names the field and says to send the input itself.
 */
export function storedStateRef(body: unknown, api: string): StoredStateRef | null {
  if (!isObject(body)) return null;
  if (api === 'openai-responses') {
    if (present(body.previous_response_id)) return ref('previous_response_id', 'a previous response');
    if (present(body.conversation)) return ref('conversation', 'a stored conversation');
    if (present(body.prompt)) return ref('prompt', 'a stored prompt');
    if (!Array.isArray(body.input)) return null;
    for (let i = 0; i < body.input.length; i++) {
      const item: unknown = body.input[i];
      if (!isObject(item)) continue;
      if (item.type === 'item_reference') return ref(`input.${i}`, 'a stored item (item_reference)');
      const found = fileIdPart(item.content, `input.${i}.content`) ?? fileIdPart(item.output, `input.${i}.output`);
      if (found !== null) return found;
    }
    return null;
  }
  if (!Array.isArray(body.messages)) return null;
  for (let i = 0; i < body.messages.length; i++) {
    const m: unknown = body.messages[i];
    if (!isObject(m) || !Array.isArray(m.content)) continue;
    const found = api === 'openai-chat' ? fileIdPart(m.content, `messages.${i}.content`) : anthropicFileBlock(m.content, `messages.${i}.content`, true);
    if (found !== null) return found;
  }
  return null;
}

function ref(param: string, what: string, instead = 'send the whole input (store: false) instead'): StoredStateRef {
  return { param, message: `${param}: refers to ${what}: ${WHY}; ${instead}` };
}

const FILE_INSTEAD = "send the file's content in the request (base64 or text) instead";

/** An OpenAI content part with a `file_id` (Responses `input_file`/`input_image`; Chat `{type: "file", file: {file_id}}`). */
function fileIdPart(parts: unknown, at: string): StoredStateRef | null {
  if (!Array.isArray(parts)) return null;
  for (let j = 0; j < parts.length; j++) {
    const p: unknown = parts[j];
    if (!isObject(p)) continue;
    if (present(p.file_id)) return ref(`${at}.${j}.file_id`, 'a file stored on the provider', FILE_INSTEAD);
    if (isObject(p.file) && present(p.file.file_id)) return ref(`${at}.${j}.file.file_id`, 'a file stored on the provider', FILE_INSTEAD);
  }
  return null;
}

/** An Anthropic block whose `source` is a stored file (`source.type: "file"`), looked for in tool_result content one level down. */
function anthropicFileBlock(blocks: unknown[], at: string, nested: boolean): StoredStateRef | null {
  for (let j = 0; j < blocks.length; j++) {
    const b: unknown = blocks[j];
    if (!isObject(b)) continue;
    if (isObject(b.source) && b.source.type === 'file') return ref(`${at}.${j}.source`, 'a file stored on the provider', FILE_INSTEAD);
    if (nested && b.type === 'tool_result' && Array.isArray(b.content)) {
      const found = anthropicFileBlock(b.content, `${at}.${j}.content`, false);
      if (found !== null) return found;
    }
  }
  return null;
}

/**
 * The input tokens the server tools of parsed body `body` (wire format `api`) may add, to reserve
 * for, or null when it enables none (then the body bound holds: {@link reportedInputCap}):
 * - `anthropic-messages`: each tool whose `type` starts with `web_search_`, `web_fetch_` or
 *   `code_execution_` allows its `max_uses` (else {@link DEFAULT_SERVER_TOOL_USES}) uses of
 *   `max_content_tokens` (web fetch's own bound on a fetched page) or else
 *   {@link SERVER_INPUT_TOKENS_PER_USE} tokens each; each `mcp_servers` entry allows the default
 *   uses of the default tokens;
 * - `openai-responses`: tools of type `web_search*`, `file_search`, `code_interpreter`, `mcp`
 *   allow `max_tool_calls` uses in all (the bound on the response's built-in tool calls), else
 *   the default uses per tool, {@link SERVER_INPUT_TOKENS_PER_USE} tokens each;
 * - `openai-chat`: a search model (server-tools.ts isChatSearchModel) one search per call;
 * - any format: content the provider fetches by URL (url-input.ts: images at their bound,
 *   documents at URL_DOCUMENT_TOKENS each), one use each; `byUrl` as input-images.ts
 *   requestMedia found it in its walk (default: a walk of its own).
 * `tokens` is at most {@link MAX_REPORTED_TOKENS} (no call is charged more input than that).
 */
export function serverInputAllowance(body: unknown, api: string, byUrl: UrlInput | null = urlInput(body)): ServerInputAllowance | null {
  const tools = toolAllowance(body, api);
  if (byUrl === null) return tools;
  const uses = (tools?.uses ?? 0) + byUrl.images + byUrl.documents;
  return { uses, tokens: Math.min((tools?.tokens ?? 0) + byUrl.images * IMAGE_TOKENS_BOUND + byUrl.documents * URL_DOCUMENT_TOKENS, MAX_REPORTED_TOKENS) };
}

/** {@link serverInputAllowance}'s part for server tools (and search models). */
function toolAllowance(body: unknown, api: string): ServerInputAllowance | null {
  if (!isObject(body)) return null;
  if (api === 'openai-chat') return isChatSearchModel(body.model) ? allowance(1, SERVER_INPUT_TOKENS_PER_USE) : null;
  const tools = Array.isArray(body.tools) ? body.tools : [];
  if (api === 'anthropic-messages') {
    let uses = 0;
    let tokens = 0;
    let any = false;
    for (const t of tools) {
      const type = typeOf(t);
      if (!ANTHROPIC_CONTENT_TOOLS.some((p) => type.startsWith(p))) continue;
      const tool = t as Record<string, unknown>;
      const n = count(tool.max_uses) ?? DEFAULT_SERVER_TOOL_USES;
      any = true;
      uses += n;
      tokens += n * (count(tool.max_content_tokens) ?? SERVER_INPUT_TOKENS_PER_USE);
    }
    if (Array.isArray(body.mcp_servers) && body.mcp_servers.length > 0) {
      any = true;
      uses += body.mcp_servers.length * DEFAULT_SERVER_TOOL_USES;
      tokens += body.mcp_servers.length * DEFAULT_SERVER_TOOL_USES * SERVER_INPUT_TOKENS_PER_USE;
    }
    return any ? { uses, tokens: Math.min(tokens, MAX_REPORTED_TOKENS) } : null;
  }
  if (api === 'openai-responses') {
    const n = tools.filter((t) => RESPONSES_CONTENT_TOOLS.some((p) => typeOf(t).startsWith(p))).length;
    if (n === 0) return null;
    return allowance(count(body.max_tool_calls) ?? n * DEFAULT_SERVER_TOOL_USES, SERVER_INPUT_TOKENS_PER_USE);
  }
  return null;
}

const allowance = (uses: number, perUse: number): ServerInputAllowance => ({ uses, tokens: Math.min(uses * perUse, MAX_REPORTED_TOKENS) });

/**
 * The most input-side tokens (input + cache read + cache write) a call may be charged as
 * reported (meter.ts CallContext.maxInputTokens): for a request without server input
 * (`allowance` null) usage.ts inputTokensBound(`bodyBytes`, `images`); with server tools that add
 * to the context, {@link MAX_REPORTED_TOKENS} — the provider's report is charged as given (their
 * results are not in the body, so the body cannot bound them), and only a report past that sanity
 * cap is charged at it, marked estimated.
 */
export function reportedInputCap(bodyBytes: number, images: number, allowance: ServerInputAllowance | null): number {
  return allowance === null ? inputTokensBound(bodyBytes, images) : MAX_REPORTED_TOKENS;
}
