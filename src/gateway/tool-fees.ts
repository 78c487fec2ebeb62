/**
 * Per-call fees of OpenAI Responses built-in tools (`/v1/responses`), charged on top of the
 * tokens like web search (server-tools.ts, H4) — reserved up front from the request's `tools`,
 * charged from the reply's output items, held to what the request allows (H1). All amounts are
 * integer micro-dollars (µ$, 1 USD = 1,000,000 µ$). Sources: OpenAI API pricing,
 * https://platform.openai.com/docs/pricing ("Built-in tools", "Image generation"), and the
 * tools guides (https://platform.openai.com/docs/guides/tools-file-search,
 * .../tools-code-interpreter, .../tools-image-generation):
 * - `file_search`: $2.50 per 1,000 tool calls → {@link FILE_SEARCH_CALL_MICROS} per
 *   `file_search_call` output item (the retrieved chunks are input tokens, in `usage`);
 * - `code_interpreter`: per container created — $0.03 for the default 1 GB container, $0.12
 *   4 GB, $0.48 16 GB, $1.92 64 GB ({@link CONTAINER_MICROS}, by the tool's
 *   `container.memory_limit`) — one per distinct `container_id` among the `code_interpreter_call`
 *   items when the tool says `container: {type: "auto"}`; a container named by id (a string
 *   `container`) or by a `code_interpreter_call` item of the request's input was created
 *   earlier, and is not charged again;
 * - `image_generation`: the image's output is billed at the image model's rates and is not in
 *   the reply's `usage`; each `image_generation_call` item is charged a flat estimate, the
 *   per-image price of the tool's `model` for its `quality` and `size` ({@link IMAGE_MICROS}:
 *   gpt-image-1, the default, and any model not listed; `gpt-image-1-mini` its own, a half to
 *   a fifth of those; `auto` quality → high, `auto` size → the dearer portrait/landscape one: the worst
 *   case), and the call's usage is then recorded as an estimate (usageKnown false).
 * Scope: the bound comes from the request, the counts from the reply (openai-usage.ts); the
 * meter (meter.ts) charges {@link toolFeeCharge}, the reservation (worst-case.ts) holds
 * {@link toolFeeWorstMicros}.
 */

/** `file_search`: $2.50 per 1,000 calls = 2,500 µ$ per `file_search_call`. */
export const FILE_SEARCH_CALL_MICROS = 2_500;

/** `code_interpreter` container memory sizes (`container.memory_limit`; `1g` when absent). */
export type ContainerMemory = '1g' | '4g' | '16g' | '64g';

/** `code_interpreter`: µ$ per container created, by memory size ($0.03 / $0.12 / $0.48 / $1.92). */
export const CONTAINER_MICROS: Readonly<Record<ContainerMemory, number>> = Object.freeze({ '1g': 30_000, '4g': 120_000, '16g': 480_000, '64g': 1_920_000 });

/** The default container size (OpenAI: `memory_limit` absent → 1 GB). */
export const DEFAULT_CONTAINER_MEMORY: ContainerMemory = '1g';

/** Image quality of the `image_generation` tool (`auto` is charged as `high`). */
export type ImageQuality = 'low' | 'medium' | 'high';

/** Price per image of one image model, µ$, by quality: `square` 1024x1024, `tall` 1024x1536 or 1536x1024. */
export type ImagePrices = Readonly<Record<ImageQuality, { square: number; tall: number }>>;

/**
 * Price per image, µ$, by the `image_generation` tool's `model` (OpenAI pricing, "Image
 * generation"): `gpt-image-1` low $0.011 / $0.016, medium $0.042 / $0.063, high $0.167 / $0.25;
 * `gpt-image-1-mini` low $0.005 / $0.006, medium $0.011 / $0.015, high $0.036 / $0.052.
 * A model not listed here is charged gpt-image-1's ({@link DEFAULT_IMAGE_MODEL}).
 */
export const IMAGE_MICROS: Readonly<Record<string, ImagePrices>> = Object.freeze({
  'gpt-image-1': Object.freeze({
    low: { square: 11_000, tall: 16_000 },
    medium: { square: 42_000, tall: 63_000 },
    high: { square: 167_000, tall: 250_000 },
  }),
  'gpt-image-1-mini': Object.freeze({
    low: { square: 5_000, tall: 6_000 },
    medium: { square: 11_000, tall: 15_000 },
    high: { square: 36_000, tall: 52_000 },
  }),
});

/** The image model of an `image_generation` tool without `model` (OpenAI's default), and the prices of models not in {@link IMAGE_MICROS}. */
export const DEFAULT_IMAGE_MODEL = 'gpt-image-1';

/** File searches reserved for when the request gives no `max_tool_calls` (as web search: server-tools.ts DEFAULT_WEB_SEARCH_USES). */
export const DEFAULT_FILE_SEARCH_CALLS = 10;

/** Containers reserved per `auto` code_interpreter tool without `max_tool_calls`: auto mode reuses its container for the rest of the response. */
export const DEFAULT_CONTAINERS_PER_AUTO_TOOL = 1;

/** Images reserved per `image_generation` tool without `max_tool_calls` (a response usually makes one). */
export const DEFAULT_IMAGE_GENERATIONS = 1;

/**
 * Without `max_tool_calls`, the most fee-bearing items (file searches + containers + images)
 * charged per output token the call may write: each is a tool call the model writes itself
 * (its query, code or prompt), so more of them than output tokens is a broken or hostile
 * upstream (H1), as for web search.
 */
export const TOOL_CALLS_PER_OUTPUT_TOKEN = 1;

/**
 * The fee-bearing items of a reply: `fileSearch` `file_search_call` items, `containers` the
 * distinct `container_id`s of its `code_interpreter_call` items (items without one count as
 * one container, the id `''`, only when no item names one: a stream's `output_item.added` may
 * come before the container is named), `images` `image_generation_call` items.
 */
export interface ToolCalls {
  fileSearch: number;
  containers: string[];
  images: number;
}

/**
 * What a Responses request allows of the fee-bearing tools (from {@link toolFeeBound}):
 * `fileSearch` a `file_search` tool is enabled; `autoContainers` how many `code_interpreter`
 * tools say `container: {type: "auto"}` and `containerMicros` the dearest of their container
 * fees (µ$); `namedContainers` how many name an existing container (a string `container`);
 * `existingContainers` container ids created before this call (string `container`s,
 * `container_id`s of `code_interpreter_call` input items); `imageTools` how many
 * `image_generation` tools and `imageMicros` the dearest per-image fee among them (µ$);
 * `declared` the request's `max_tool_calls` (bounds all built-in tool calls), or null.
 */
export interface ToolFeeBound {
  fileSearch: boolean;
  autoContainers: number;
  containerMicros: number;
  namedContainers: number;
  existingContainers: ReadonlySet<string>;
  imageTools: number;
  imageMicros: number;
  declared: number | null;
}

/** What {@link toolFeeCharge} charges: `micros` (µ$); `capped` the counts were past the bound; `estimated` an image fee (a flat estimate) is in it. */
export interface ToolFeeCharge {
  micros: number;
  capped: boolean;
  estimated: boolean;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const count = (v: unknown): number | null => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : null);
const DEAREST_CONTAINER = Math.max(...Object.values(CONTAINER_MICROS));
const DEAREST_IMAGE = IMAGE_MICROS[DEFAULT_IMAGE_MODEL]!.high.tall;

/** µ$ of one container of `memory` (`container.memory_limit`): absent → 1 GB; a value OpenAI does not list → the dearest. */
export function containerMicros(memory: unknown): number {
  if (memory === undefined || memory === null) return CONTAINER_MICROS[DEFAULT_CONTAINER_MEMORY];
  return typeof memory === 'string' && Object.hasOwn(CONTAINER_MICROS, memory) ? CONTAINER_MICROS[memory as ContainerMemory] : DEAREST_CONTAINER;
}

/**
 * µ$ of one image of an `image_generation` tool with `quality`, `size` and `model`:
 * `low`/`medium`/`high` as listed, anything else (`auto`, absent) high; `1024x1024` square,
 * anything else (`auto`, absent, the 1536 sizes) the portrait/landscape price; the model's
 * prices from {@link IMAGE_MICROS}, gpt-image-1's when it is absent or not listed.
 */
export function imageMicros(quality: unknown, size: unknown, model?: unknown): number {
  const q: ImageQuality = quality === 'low' || quality === 'medium' ? quality : 'high';
  const prices = (typeof model === 'string' && Object.hasOwn(IMAGE_MICROS, model) ? IMAGE_MICROS[model] : IMAGE_MICROS[DEFAULT_IMAGE_MODEL])!;
  return size === '1024x1024' ? prices[q].square : prices[q].tall;
}

/**
 * The fee-bearing tools of a parsed Responses request body, or null when it enables none
 * (`tools` entries of type `file_search`, `code_interpreter`, `image_generation`).
 */
export function toolFeeBound(body: unknown): ToolFeeBound | null {
  if (!isObject(body) || !Array.isArray(body.tools)) return null;
  let fileSearch = false;
  let autoContainers = 0;
  let namedContainers = 0;
  let containerFee = 0;
  let imageTools = 0;
  let imageFee = 0;
  let any = false;
  const existing = new Set<string>();
  for (const t of body.tools) {
    if (!isObject(t)) continue;
    if (t.type === 'file_search') {
      fileSearch = any = true;
    } else if (t.type === 'code_interpreter') {
      any = true;
      if (typeof t.container === 'string') {
        namedContainers += 1;
        existing.add(t.container);
      } else {
        autoContainers += 1;
        containerFee = Math.max(containerFee, containerMicros(isObject(t.container) ? t.container.memory_limit : undefined));
      }
    } else if (t.type === 'image_generation') {
      any = true;
      imageTools += 1;
      imageFee = Math.max(imageFee, imageMicros(t.quality, t.size, t.model));
    }
  }
  if (!any) return null;
  if (Array.isArray(body.input)) for (const it of body.input) if (isObject(it) && it.type === 'code_interpreter_call' && typeof it.container_id === 'string') existing.add(it.container_id);
  return { fileSearch, autoContainers, containerMicros: containerFee, namedContainers, existingContainers: existing, imageTools, imageMicros: imageFee, declared: count(body.max_tool_calls) };
}

/**
 * What the reservation holds for `bound`'s fees, µ$: with `max_tool_calls` N, N calls at the
 * dearest fee the request enables (N bounds all built-in tool calls together; a container
 * takes at least one call); without, {@link DEFAULT_FILE_SEARCH_CALLS} file searches,
 * {@link DEFAULT_CONTAINERS_PER_AUTO_TOOL} container per auto tool and
 * {@link DEFAULT_IMAGE_GENERATIONS} image per image tool (an estimate, as web search's default:
 * a call using more is charged what it used, up to {@link toolCallCap}). 0 for null.
 */
export function toolFeeWorstMicros(bound: ToolFeeBound | null): number {
  if (bound === null) return 0;
  if (bound.declared !== null) {
    const dearest = Math.max(bound.fileSearch ? FILE_SEARCH_CALL_MICROS : 0, bound.autoContainers > 0 ? bound.containerMicros : 0, bound.imageTools > 0 ? bound.imageMicros : 0);
    return bound.declared * dearest;
  }
  return (bound.fileSearch ? DEFAULT_FILE_SEARCH_CALLS * FILE_SEARCH_CALL_MICROS : 0) + bound.autoContainers * DEFAULT_CONTAINERS_PER_AUTO_TOOL * bound.containerMicros + bound.imageTools * DEFAULT_IMAGE_GENERATIONS * bound.imageMicros;
}

/** The most fee-bearing items a call may be charged: `max_tool_calls` when declared, else {@link TOOL_CALLS_PER_OUTPUT_TOKEN} per output token allowed. */
export function toolCallCap(bound: ToolFeeBound | null, maxOutputTokens: number): number {
  return bound?.declared ?? Math.max(0, maxOutputTokens) * TOOL_CALLS_PER_OUTPUT_TOKEN;
}

/**
 * The fees of a reply's fee-bearing items `calls` under the request's `bound` (null: the
 * request enabled none of these tools), in µ$: file searches × {@link FILE_SEARCH_CALL_MICROS};
 * containers created in the call (ids not in `bound.existingContainers`; none when the
 * request's code_interpreter tools all name a container) × the tool's container fee; images ×
 * the tool's per-image fee (`estimated`). When `limit` is true (not the scripted model) items
 * of a kind the request did not enable are charged none, and the rest are held to
 * {@link toolCallCap} in all, less `usedCalls` (the web searches charged, when they share that
 * bound: OpenAI Responses' max_tool_calls), the dearest kind kept first (either: `capped`). Unlimited (the
 * scripted model's own figures), a kind not enabled is charged at the dearest fee.
 */
export function toolFeeCharge(calls: ToolCalls, bound: ToolFeeBound | null, maxOutputTokens: number, limit = true, usedCalls = 0): ToolFeeCharge {
  const existing = bound?.existingContainers;
  // code_interpreter tools that all name their container create none
  const namedOnly = bound !== null && bound.autoContainers === 0 && bound.namedContainers > 0;
  let containers = namedOnly ? 0 : calls.containers.filter((id) => !existing?.has(id)).length;
  const containerFee = bound !== null && bound.autoContainers > 0 ? bound.containerMicros : DEAREST_CONTAINER;
  const imageFee = bound !== null && bound.imageTools > 0 ? bound.imageMicros : DEAREST_IMAGE;
  let images = calls.images;
  let searches = calls.fileSearch;
  let capped = false;
  if (limit) {
    // H1: a kind of tool the request did not enable is charged none — nothing was reserved for
    // it and a provider runs no tool it was not given (the same rule as web search's,
    // server-tools.ts webSearchCap; they were charged at the dearest fees, past the reservation)
    if (images > 0 && !(bound !== null && bound.imageTools > 0)) [images, capped] = [0, true];
    if (containers > 0 && !(bound !== null && bound.autoContainers + bound.namedContainers > 0)) [containers, capped] = [0, true];
    if (searches > 0 && bound?.fileSearch !== true) [searches, capped] = [0, true];
    let left = Math.max(0, toolCallCap(bound, maxOutputTokens) - usedCalls);
    const kinds = [
      { fee: imageFee, take: (n: number) => (images = n), n: images },
      { fee: containerFee, take: (n: number) => (containers = n), n: containers },
      { fee: FILE_SEARCH_CALL_MICROS, take: (n: number) => (searches = n), n: searches },
    ].sort((a, b) => b.fee - a.fee);
    for (const k of kinds) {
      const kept = Math.min(k.n, left);
      if (kept < k.n) capped = true;
      k.take(kept);
      left -= kept;
    }
  }
  return { micros: searches * FILE_SEARCH_CALL_MICROS + containers * containerFee + images * imageFee, capped, estimated: images > 0 };
}

/** True when `calls` holds no fee-bearing item. */
export function noToolCalls(calls: ToolCalls): boolean {
  return calls.fileSearch === 0 && calls.images === 0 && calls.containers.length === 0;
}

/**
 * Counts the fee-bearing output items of a Responses reply as they are seen, each once by its
 * key (its `id`, else its output index): `add` each item (of `response.output_item.added` /
 * `.done`, or of the final output list), `calls()` the counts.
 */
export class ToolCallTally {
  private readonly fileSearch = new Set<string>();
  private readonly images = new Set<string>();
  private readonly containers = new Set<string>();

  /** Notes output item `item` at output index `index` (anything but a fee-bearing item is ignored). */
  add(item: unknown, index: unknown): void {
    if (!isObject(item)) return;
    const key = typeof item.id === 'string' ? item.id : `#${String(index)}`;
    if (item.type === 'file_search_call') this.fileSearch.add(key);
    else if (item.type === 'image_generation_call') this.images.add(key);
    else if (item.type === 'code_interpreter_call') this.containers.add(typeof item.container_id === 'string' ? item.container_id : '');
  }

  /** Notes every item of a reply's `output` list (not an array: nothing). */
  addAll(output: unknown): void {
    if (Array.isArray(output)) for (let i = 0; i < output.length; i++) this.add(output[i], i);
  }

  /** The counts so far. */
  calls(): ToolCalls {
    return { fileSearch: this.fileSearch.size, containers: distinctContainers(this.containers), images: this.images.size };
  }
}

/** The fee-bearing items of a Responses reply's `output` list ({@link ToolCallTally}). */
export function toolCallsIn(output: unknown): ToolCalls {
  const t = new ToolCallTally();
  t.addAll(output);
  return t.calls();
}

/** The larger reading of two counts of one reply (the stream's events, its final output list): counts the larger, containers the union. */
export function mergeToolCalls(a: ToolCalls, b: ToolCalls): ToolCalls {
  return { fileSearch: Math.max(a.fileSearch, b.fileSearch), containers: distinctContainers(new Set([...a.containers, ...b.containers])), images: Math.max(a.images, b.images) };
}

/** The container ids of `ids`, `''` (items that named none) left out when some item named one ({@link ToolCalls}). */
function distinctContainers(ids: ReadonlySet<string>): string[] {
  const named = [...ids].filter((id) => id !== '');
  return named.length > 0 || !ids.has('') ? named : [''];
}
