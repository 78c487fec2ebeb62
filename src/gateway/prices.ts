import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { TablePriceSchema, type TablePrice } from './price-schema.js';
import { findRepeatedKey } from '../core/json-keys.js';
import { PriceModelName } from '../protocol/model-routes.js';
import { resolveIssue } from '../protocol/errors.js';

export type { LongContextPrice, TablePrice } from './price-schema.js';

/**
 * The gateway's price table: USD per million tokens per model (see data/prices.json), and per
 * model the per-request price of server-side web search (`webSearch`, USD per 1,000 requests;
 * a model without one takes the `default` entry's, see {@link priceFor}), its maximum output
 * (`maxOutput`, tokens) and long-context rates (`longContext`), when known (price-schema.ts).
 * `version` names the table's edition (a date); `default` prices any model not listed.
 */
export interface PriceTable {
  version: string;
  models: Record<string, TablePrice>;
  default: TablePrice;
}

/**
 * A price table file: the shipped one's fields and nothing else (a misspelt `maxOuput` was
 * dropped without a word, fresh-user finding); model names as the API and flotilla.yaml take
 * them (protocol PriceModelName); `unit` and `note` are words for people.
 */
const PriceFile = z
  .object({
    version: z.string().min(1),
    unit: z.string().optional(),
    note: z.string().optional(),
    models: z.record(PriceModelName, TablePriceSchema.strict()),
    default: TablePriceSchema.strict(),
  })
  .strict();

/**
 * The shipped table, `<package root>/data/prices.json`. Resolved from this module's URL, which
 * sits two folders below the package root both as src/gateway/prices.ts and dist/gateway/prices.js.
 */
export const DEFAULT_PRICES_FILE = fileURLToPath(new URL('../../data/prices.json', import.meta.url));

/**
 * Reads and validates a price table file (default: the shipped data/prices.json).
 * @throws Error naming the file and the bad field when the file is missing or malformed (an
 *   unknown field, a model name the API would refuse, or a field given twice included).
 */
export function loadPriceTable(file: string = DEFAULT_PRICES_FILE): PriceTable {
  let raw: unknown;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
    raw = JSON.parse(text);
  } catch (err) {
    throw new Error(`price table ${file}: ${(err as Error).message}`);
  }
  // JSON.parse keeps the last of a model given twice: a table that prices one model two ways is refused
  const twice = findRepeatedKey(text);
  if (twice !== null) throw new Error(`price table ${file}: field ${twice}: given twice; give each once`);
  const models = (raw as { models?: unknown } | null)?.models;
  if (typeof models === 'object' && models !== null && Object.hasOwn(models, '__proto__')) {
    // the validation of a record drops this key (prototype pollution): it would be ignored without a word
    throw new Error(`price table ${file}: field models.__proto__: a model of that name cannot be read from a file (it would be dropped): price it with flotilla models price`);
  }
  const parsed = PriceFile.safeParse(raw);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    const issue = first && resolveIssue(first);
    const field = issue?.path.map(String).join('.') || '(root)';
    // PriceModelName's advice for "default" (give the server a table of your own) is this very file
    if (field === 'models.default') throw new Error(`price table ${file}: field models.default: "default" is not a model name: the entry for the models the table does not list is the top-level "default", beside "models"`);
    throw new Error(`price table ${file}: field ${field}: ${issue?.message ?? 'invalid'}`);
  }
  return parsed.data;
}

/**
 * The name without its snapshot date, `-latest` or Ollama's `:latest` tag (the name without a
 * tag is that one): `claude-sonnet-4-5-20250929` → `claude-sonnet-4-5`;
 * `claude-3-7-sonnet@20250219` → `claude-3-7-sonnet` (Vertex AI's form); `gpt-4o-mini-2024-07-18`
 * → `gpt-4o-mini` (OpenAI's); `qwen3:latest` → `qwen3`. A snapshot priced unlike its model
 * (OpenAI's `gpt-4o-2024-05-13`) is listed under its own name in the table, which wins. Any
 * other tag (`qwen3:8b`, `qwen3:235b`: another size, another cost) is a name of its own.
 */
function stripDate(model: string): string {
  return model.replace(SNAPSHOT_DATE, '').replace(/(?:-|:)latest$/, '');
}

/** A snapshot date at the end of a name: a real calendar date of 2000–2099 (`-12345678` is no date: tester finding), 8 digits or OpenAI's `-YYYY-MM-DD`. */
const SNAPSHOT_DATE = /(?:[-@]20\d\d(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])|-20\d\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01]))$/;

/**
 * The price of `model`: exact name, then the name without a date (or `-latest`) suffix, then
 * the longest listed name that is a prefix of it (at a `-` boundary) when every word after it
 * is one that never names a dearer model ({@link SAME_OR_CHEAPER_WORDS}: `gpt-5.1-codex`,
 * `gpt-5.2-chat`), else `table.default`. Any other variant of a listed model
 * (`o3-deep-research`, `gpt-4o-realtime-preview`, `gpt-5-pro`: 2–12× its model's rates) gets
 * the default: an unknown model must not look cheap (fresh-tester finding: a deny-list of
 * `-pro`, `-max`, `-ultra` charged `o3-deep-research` at `o3`'s rates, a fifth of its price). A price without `webSearch` (USD per 1,000 searches)
 * gets the default entry's (H4: a web search must not look free); a price override that leaves
 * it out already took the entry it replaced's when that has one (price-override.ts
 * overriddenPrice), so only a model whose table entry has none gets the default's here.
 */
export function priceFor(table: PriceTable, model: string): TablePrice {
  const p = tokenPriceFor(table, model);
  if (p.webSearch !== undefined || table.default.webSearch === undefined) return p;
  let filled = withDefaultSearch.get(p);
  if (filled === undefined || filled.webSearch !== table.default.webSearch) {
    filled = { ...p, webSearch: table.default.webSearch };
    withDefaultSearch.set(p, filled);
  }
  return filled;
}

/** Prices without `webSearch`, completed with the default's (one copy per price object, not per call). */
const withDefaultSearch = new WeakMap<TablePrice, TablePrice>();

/**
 * {@link priceFor}'s name matching, the entry as listed (`webSearch` not completed from the
 * default): the entry a price override of `model` replaces (price-override.ts). Names match
 * whatever their case (listed names are lower case; `GPT-5-PRO` through a case-insensitive
 * company gateway is gpt-5-pro: a fresh tester's was charged the default, a third less). A
 * variant of a listed model that may be dearer (another word after its name, or a `:` tag) is
 * charged the default price, or its model's rate by rate where that is higher: never less than
 * the model it names a variant of (`o1-pro:8b` was charged the $15 / $75 default where o1-pro
 * lists $150 / $600: fresh tester).
 */
export function tokenPriceFor(table: PriceTable, model: string): TablePrice {
  const exact = listedPrice(table, model);
  if (exact) return exact;
  const name = model.toLowerCase();
  const lower = name === model ? undefined : listedPrice(table, name);
  if (lower) return lower;
  const base = stripDate(name);
  const undated = listedPrice(table, base);
  if (undated) return undated;
  let best: string | null = null;
  for (const listed of Object.keys(table.models)) {
    if ((base.startsWith(listed + '-') || base.startsWith(listed + ':')) && (best === null || listed.length > best.length)) best = listed;
  }
  if (best === null) return table.default;
  // A variant of a listed model is that model's price only when every word after its name is
  // one that never names a dearer model; any other gets the default price unless it is listed.
  if (base[best.length] === '-' && base.slice(best.length + 1).split('-').every(sameOrCheaperWord)) return table.models[best]!;
  return dearerOf(table.default, table.models[best]!);
}

/**
 * The default price `a` with each rate raised to the listed model `b`'s where that is higher,
 * and `b`'s long-context threshold with its rates raised the same way (no `maxOutput`: the
 * variant's own is not known).
 */
function dearerOf(a: TablePrice, b: TablePrice): TablePrice {
  const rates = (x: CacheRated, y: CacheRated) => ({
    input: Math.max(x.input, y.input),
    output: Math.max(x.output, y.output),
    cacheWrite5m: Math.max(x.cacheWrite5m, y.cacheWrite5m),
    cacheWrite1h: Math.max(x.cacheWrite1h, y.cacheWrite1h),
    cacheRead: Math.max(x.cacheRead, y.cacheRead),
  });
  const notAbove = (y: CacheRated) => y.input <= a.input && y.output <= a.output && y.cacheWrite5m <= a.cacheWrite5m && y.cacheWrite1h <= a.cacheWrite1h && y.cacheRead <= a.cacheRead;
  // the default itself when no rate of `b` is higher (the same object: priceFor's completion of it is kept)
  if (notAbove(b) && (b.webSearch ?? 0) <= (a.webSearch ?? 0) && (!b.longContext || notAbove(b.longContext))) return a;
  const out: TablePrice = rates(a, b);
  if (a.webSearch !== undefined || b.webSearch !== undefined) out.webSearch = Math.max(a.webSearch ?? 0, b.webSearch ?? 0);
  if (b.longContext) out.longContext = { aboveInputTokens: b.longContext.aboveInputTokens, ...rates(a, b.longContext) };
  return out;
}
type CacheRated = Pick<TablePrice, 'input' | 'output' | 'cacheWrite5m' | 'cacheWrite1h' | 'cacheRead'>;

/**
 * The entry `table` lists under exactly `name`, or undefined: an own key only. A model name is
 * the client's text, and `table.models[name]` read `toString`, `constructor`, ... from
 * Object.prototype as a price (a function: the call failed with a 500 and no ledger row).
 */
export function listedPrice(table: PriceTable, name: string): TablePrice | undefined {
  return Object.hasOwn(table.models, name) ? table.models[name] : undefined;
}

/**
 * Sets `models[name]` to `price` as an own entry whatever the name: an assignment to a key
 * `__proto__` would replace the object's prototype instead (and every unlisted model would
 * then find that price).
 */
export function setModelPrice(models: Record<string, TablePrice>, name: string, price: TablePrice): void {
  Object.defineProperty(models, name, { value: price, enumerable: true, writable: true, configurable: true });
}

/**
 * Name parts after a listed model's name that never make a dearer model of it, from the
 * providers' model lists: `chat` and `codex` (OpenAI's `gpt-5.1-chat-latest` and
 * `gpt-5.1-codex` are priced as `gpt-5.1`), `mini` and `nano` (cheaper: charged at the listed
 * model's rates, more than they cost, never less), `latest`, and a version `v2` (Vertex AI's
 * `claude-3-5-sonnet-v2@20241022`). Every other word (`pro`, `max`, `ultra`, `deep`,
 * `research`, `realtime`, `audio`, `search`, `preview`, ...) may name a dearer model.
 */
const SAME_OR_CHEAPER_WORDS: ReadonlySet<string> = new Set(['chat', 'codex', 'mini', 'nano', 'latest']);
const sameOrCheaperWord = (w: string): boolean => SAME_OR_CHEAPER_WORDS.has(w) || /^v\d{1,3}$/.test(w);
