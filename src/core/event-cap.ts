import { MAX_EVENT_DATA_BYTES } from '../protocol/events.js';

/**
 * The per-event size cap (protocol/events.ts {@link MAX_EVENT_DATA_BYTES}): a job event's
 * `data` cut to a byte budget as JSON text, keeping its shape. Used by the runner before an
 * event enters its outbox and by the store before events are stored, so a 15 MB log line or
 * tool result is neither uploaded nor stored nor served whole.
 *
 * How a value over the budget is cut (sizes are UTF-8 bytes of the JSON text):
 * - a string keeps its longest prefix that fits (never half a surrogate pair) followed by
 *   {@link truncationMarker} `… [truncated 14.1 MiB]`;
 * - an object (or an array) of at most {@link WATER_FILL_MAX} entries keeps every entry: the
 *   budget is shared out smallest first, so small entries stay whole and only the big ones are
 *   cut (a `tool.result` keeps its id, name and isError; only `output` is cut);
 * - a bigger one keeps its first entries that fit, then one marker entry (`"… [truncated N
 *   more items, 3.2 MiB]"` in an array, key `…` in an object);
 * - numbers, booleans and null are kept.
 * Nothing is copied when the value fits (the common case costs one walk over its strings).
 */

/** Entries an object or array may have and still keep all of them when cut (see the module comment). */
export const WATER_FILL_MAX = 256;

/** Bytes kept free for a string's marker (`… [truncated 1023.9 KiB]` is 26). */
const MARKER_RESERVE = 32;
/** Bytes kept free for the marker entry of a cut array or object (and its comma). */
const ENTRY_MARKER_RESERVE = 96;
/** A cut array or object gives its first overflowing entry what room is left only when at least this much. */
const MIN_PARTIAL = 1024;

/** `bytes` as people read sizes: `512 B`, `3.2 KiB`, `14.1 MiB`, `1.5 GiB` (binary units). */
export function sizeText(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB'];
  let v = bytes / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}

/** What ends a cut string: `… [truncated <size of what was cut>]`. */
export function truncationMarker(cutBytes: number): string {
  return `… [truncated ${sizeText(cutBytes)}]`;
}

/**
 * `event` with its `data` at most `maxBytes` (default {@link MAX_EVENT_DATA_BYTES}) as JSON
 * text, cut as the module comment says; every other field (type, rseq, at, ...) as is. A cut
 * `tool.result` output also sets `truncated: true`. The same object when the data fits.
 * @param maxBytes UTF-8 bytes, at least 1024.
 * @throws Error when maxBytes is below 1024.
 */
export function capEvent<T extends { type: string; data: unknown }>(event: T, maxBytes: number = MAX_EVENT_DATA_BYTES): T {
  if (!(maxBytes >= 1024)) throw new Error(`capEvent: maxBytes must be at least 1024, got ${maxBytes}`);
  const isResult = event.type === 'tool.result';
  // Room for the `"truncated":true` a cut tool result gains.
  const data = capJson(event.data, isResult ? maxBytes - 20 : maxBytes);
  if (data === event.data) return event;
  if (isResult && isRecord(data) && isRecord(event.data) && data.output !== event.data.output) return { ...event, data: { ...data, truncated: true } };
  return { ...event, data };
}

/**
 * A JSON value (as `JSON.parse` gives: no undefined, functions or cycles) cut to at most
 * `maxBytes` UTF-8 bytes of JSON text, as the module comment says; the value itself (not a
 * copy) when it fits; the input is never changed. Numbers, booleans, null and object keys are
 * not cut themselves: an array or object with too many of them loses its last entries. The
 * shares are worked out from exact sizes and checked after; a result still over (a marker
 * longer than reserved) is cut again with a smaller budget, up to 4 passes.
 */
export function capJson(value: unknown, maxBytes: number): unknown {
  if (quickLeft(value, maxBytes) >= 0) return value;
  const whole = measure(value);
  if (whole.size <= maxBytes) return value;
  let budget = maxBytes;
  let out: unknown = value;
  let size = whole.size;
  // The shares come from exact sizes; another pass only when the markers took more than reserved.
  for (let pass = 0; pass < 4 && size > maxBytes; pass++) {
    out = fit(whole, budget);
    size = measure(out).size;
    budget -= size - maxBytes + 64;
  }
  return out;
}

/** A value with its JSON size (bytes) and, for arrays and objects, its entries' sizes. */
interface Sized {
  v: unknown;
  size: number;
  /** Arrays and objects: the entries, in order. */
  kids?: Sized[];
  /** Objects: the keys of `kids`, and what each costs besides its value (`"key":`). */
  keys?: string[];
  keyBytes?: number[];
}

/** UTF-8 bytes of `s` as a JSON string literal (quotes and escapes included). */
function jsonStringBytes(s: string): number {
  return Buffer.byteLength(JSON.stringify(s));
}

/**
 * An upper bound's remainder: `left` minus at most what `v` takes as JSON (6 bytes per UTF-16
 * unit covers `\u0000` escapes and 3-byte characters; 24 bytes per number), negative once it
 * may not fit. No allocation: the fast path of every event.
 */
function quickLeft(v: unknown, left: number): number {
  if (typeof v === 'string') return left - (6 * v.length + 2);
  if (v === null || typeof v !== 'object') return left - 24;
  left -= 2;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length && left >= 0; i++) left = quickLeft(v[i], left - 1);
    return left;
  }
  const o = v as Record<string, unknown>;
  for (const k in o) {
    if (!Object.prototype.hasOwnProperty.call(o, k)) continue;
    left = quickLeft(o[k], left - (6 * k.length + 4));
    if (left < 0) return left;
  }
  return left;
}

function measure(v: unknown): Sized {
  if (typeof v === 'string') return { v, size: jsonStringBytes(v) };
  if (v === null || typeof v !== 'object') return { v, size: (JSON.stringify(v) ?? 'null').length };
  if (Array.isArray(v)) {
    const kids = v.map((x) => measure(x === undefined ? null : x));
    return { v, kids, size: 2 + Math.max(0, kids.length - 1) + kids.reduce((s, k) => s + k.size, 0) };
  }
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o).filter((k) => o[k] !== undefined);
  const kids = keys.map((k) => measure(o[k]));
  const keyBytes = keys.map((k) => jsonStringBytes(k) + 1);
  let size = 2 + Math.max(0, keys.length - 1);
  for (let i = 0; i < keys.length; i++) size += keyBytes[i]! + kids[i]!.size;
  return { v, kids, keys, keyBytes, size };
}

/** `n`'s value cut to about `budget` bytes of JSON. */
function fit(n: Sized, budget: number): unknown {
  if (n.size <= budget) return n.v;
  if (typeof n.v === 'string') return cutString(n.v, budget);
  if (!n.kids) return n.v;
  const fixed = n.keyBytes ?? n.kids.map(() => 0);
  const overhead = 2 + Math.max(0, n.kids.length - 1) + fixed.reduce((s, b) => s + b, 0);
  const { values, marker } = n.kids.length <= WATER_FILL_MAX && overhead <= budget ? { values: waterFill(n.kids, budget - overhead), marker: null } : keepFirst(n, fixed, budget);
  if (!n.keys) return marker === null ? values : [...values, marker];
  const out: Record<string, unknown> = {};
  for (let i = 0; i < values.length; i++) out[n.keys[i]!] = values[i];
  if (marker !== null) out[uniqueKey(out)] = marker;
  return out;
}

/** Every entry kept, `room` shared out smallest first: an entry smaller than its share stays whole. */
function waterFill(kids: readonly Sized[], room: number): unknown[] {
  const out: unknown[] = new Array(kids.length);
  const order = kids.map((_, i) => i).sort((a, b) => kids[a]!.size - kids[b]!.size);
  let left = room;
  for (let j = 0; j < order.length; j++) {
    const k = kids[order[j]!]!;
    const share = Math.floor(left / (order.length - j));
    const give = Math.min(k.size, Math.max(0, share));
    out[order[j]!] = fit(k, give);
    left -= give;
  }
  return out;
}

/**
 * The first entries that fit in `budget` (the first one that does not, cut to the room left
 * when that is enough), and the marker that stands for the dropped ones (null: none dropped).
 */
function keepFirst(n: Sized, fixed: readonly number[], budget: number): { values: unknown[]; marker: string | null } {
  const kids = n.kids!;
  const room = budget - 2 - ENTRY_MARKER_RESERVE;
  const values: unknown[] = [];
  let used = 0;
  let i = 0;
  for (; i < kids.length; i++) {
    const cost = fixed[i]! + kids[i]!.size + (i > 0 ? 1 : 0);
    if (used + cost <= room) {
      values.push(kids[i]!.v);
      used += cost;
      continue;
    }
    const rest = room - used - fixed[i]! - (i > 0 ? 1 : 0);
    if (rest >= MIN_PARTIAL && (typeof kids[i]!.v === 'string' || kids[i]!.kids)) {
      values.push(fit(kids[i]!, rest));
      i++;
    }
    break;
  }
  if (i >= kids.length) return { values, marker: null };
  let dropped = 0;
  for (let j = i; j < kids.length; j++) dropped += fixed[j]! + kids[j]!.size;
  return { values, marker: `… [truncated ${kids.length - i} more ${n.keys ? 'keys' : 'items'}, ${sizeText(dropped)}]` };
}

/** The longest prefix of `s` whose JSON fits `budget` bytes with the marker, then the marker. */
function cutString(s: string, budget: number): string {
  const room = Math.max(0, budget - 2 - MARKER_RESERVE);
  let n = Math.min(s.length, room);
  let kept = '';
  while (n > 0) {
    const c = s.charCodeAt(n - 1);
    if (c >= 0xd800 && c <= 0xdbff) n--; // never end on half a surrogate pair
    const p = s.slice(0, n);
    const b = jsonStringBytes(p) - 2;
    if (b <= room) {
      kept = p;
      break;
    }
    // Shrink in proportion to the bytes per unit seen (a unit is 1 to 6 bytes of JSON).
    n = Math.min(n - 1, Math.floor((n * room) / b));
  }
  return kept + truncationMarker(Buffer.byteLength(s) - Buffer.byteLength(kept));
}

/** A key for an object's marker entry that none of its kept keys has: `…`, `……`, ... */
function uniqueKey(o: Record<string, unknown>): string {
  let k = '…';
  while (Object.prototype.hasOwnProperty.call(o, k)) k += '…';
  return k;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
