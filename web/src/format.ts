// Display formats. Money arrives as integer micro-dollars (µ$) from the API.
import { formatMicros, PLAIN_DECIMAL } from '../../src/protocol/usd.js';
import { ApiError } from '../../src/client/errors.js';

/**
 * µ$ → `$0.008450`: exact to the µ$, in integer arithmetic, the text the CLI prints for the
 * same figure (protocol/usd.ts formatMicros). Rounding to fewer decimals (binary floats'
 * `toFixed`) showed 11 µ$ spent as `$0.0000` and 8,450 µ$ as `$0.0084`, disagreeing with the
 * CLI and the API (fresh-user finding).
 */
export function usd(micros: number): string {
  return formatMicros(micros);
}

/**
 * A dollar amount typed in a top-up box → USD, or null when it is not what the CLI takes
 * (protocol/usd.ts PLAIN_DECIMAL, as cli/options.ts usdArg): a plain decimal (`1`, `0.5`, `.5`)
 * of at most 6 places, from $0.000001 to $100,000 (`1e3`, which the browser's number field lets
 * through, is refused as `flotilla budget --add 1e3` is). Spaces around it are refused, as the CLI refuses them.
 */
export function typedUsd(text: string): number | null {
  // a " 2 " budget started a $2 job (fresh-tester finding): PLAIN_DECIMAL has no room for spaces
  if (!PLAIN_DECIMAL.test(text) || (text.split('.')[1]?.length ?? 0) > 6) return null;
  const n = Number(text);
  return n >= 0.000001 && n <= 100_000 ? n : null;
}

/** Whole numbers with thousands separators. */
export function int(n: number): string {
  return n.toLocaleString('en-US');
}

/** ISO time → `2026-11-30 12:54:20` (local time). */
export function when(isoText: string | null | undefined): string {
  if (!isoText) return '—';
  const d = new Date(isoText);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** An ISO 8601 UTC time as the server writes them in its texts (`Date.toISOString`). */
const ISO_UTC = /\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,3})?Z\b/g;

/**
 * `text` (a server's note, e.g. a queued job's `waiting`: "... on hold (r1 until
 * 2026-12-07T23:17:51.025Z), waiting") with each ISO 8601 UTC time in it written as {@link when}
 * writes times, in local time, as the rest of the page (fresh tester: the Waiting row was UTC).
 */
export function localTimesIn(text: string): string {
  return text.replace(ISO_UTC, (iso) => when(iso));
}

/** Milliseconds → `1h 02m`, `3m 04s`, `12s`, `450ms`. */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))}ms`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, '0')}m`;
}

/** How long ago an ISO time was, e.g. `4s ago`. */
export function ago(isoText: string | null | undefined, now = Date.now()): string {
  if (!isoText) return 'never';
  return `${duration(now - Date.parse(isoText))} ago`;
}

/**
 * A job's run time: started → finished (or now while running). A job paused for budget has the
 * end of its stopped attempt as `finishedAt` but is not over: its time so far, marked `(paused)`.
 */
export function jobDuration(j: { status?: string; startedAt: string | null; finishedAt: string | null }, now = Date.now()): string {
  if (!j.startedAt) return '—';
  const d = duration((j.finishedAt ? Date.parse(j.finishedAt) : now) - Date.parse(j.startedAt));
  return j.status === 'paused' ? `${d} (paused)` : d;
}

/** `{os: "linux"}` → `os=linux`. */
export function labelsText(labels: Record<string, string>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

/**
 * The start of day `yyyy-mm-dd` (a date input's value) in the browser's time zone, and of the
 * day after it, as ISO 8601 instants: the jobs list's date filter, whose days are the ones its
 * list shows times in (local time; a fresh tester: the filter read the dates as UTC days, so a
 * job started at 19:00 in Los Angeles was under the next day). The next day is counted in the
 * calendar, not as 24 h (a day of a clock change has 23 or 25). Null for text that is no date.
 */
export function localDay(day: string): { start: string; next: string } | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day);
  if (!m) return null;
  const [y, mo, d] = [Number(m[1]), Number(m[2]) - 1, Number(m[3])];
  const start = new Date(y, mo, d);
  if (start.getFullYear() !== y || start.getMonth() !== mo || start.getDate() !== d) return null;
  return { start: start.toISOString(), next: new Date(y, mo, d + 1).toISOString() };
}

/** The message to show for an error from the SDK. */
export function errorText(e: unknown): string {
  // the field, unless the message names it already (`addUsd: job tree 5's budget would be …`: fresh tester)
  if (e instanceof ApiError) return `${e.message}${e.field && !e.message.startsWith(`${e.field}:`) ? ` (${e.field})` : ''}`;
  return e instanceof Error ? e.message : String(e);
}
