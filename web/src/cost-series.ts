// Spend over time per group, from the server's cost rollups (GET /api/costs). The API groups by
// one dimension at a time and takes a `since` bound: the ledger sum of group k on UTC day d is
// sum(since d) − sum(since the next day that has spend), so one rollup per day with spend gives
// the per-day series without the browser summing any jobs.
import type { CostRollup } from '../../src/protocol/index.js';

const DAY_MS = 86_400_000;

/** A chart-ready series: x = UTC day starts in epoch seconds, one value list per group (USD). */
export interface DaySeries {
  x: number[];
  series: Array<{ name: string; values: number[] }>;
}

/**
 * The UTC days (`YYYY-MM-DD`, ascending) a `by=day` rollup has spend on.
 * A rollup may list a day with calls but 0 µ$ (all refused): those are kept (they have rows).
 */
export function spendDays(byDay: CostRollup): string[] {
  return byDay.rows.map((r) => r.key).sort();
}

/**
 * Per-day µ$ per group from cumulative rollups: `cumulative[i]` is the rollup (any `by` except
 * `day`) with `since = days[i]` (UTC midnight), for the ascending `days` of {@link spendDays}.
 * x runs over every UTC day from the first to the last spend day (0 on days without spend).
 * Keeps the `top` groups by total spend and folds the rest into `other`. Values are USD
 * (µ$ / 1e6) for the chart; a negative difference (a call landing between two requests) reads 0.
 * @throws Error when `cumulative` and `days` differ in length.
 */
export function perDaySeries(days: readonly string[], cumulative: readonly CostRollup[], top = 8, label: (key: string) => string = (k) => k): DaySeries {
  if (days.length !== cumulative.length) throw new Error(`perDaySeries: ${days.length} days but ${cumulative.length} rollups`);
  const cum = cumulative.map((r) => new Map(r.rows.map((row) => [row.key, row.costMicros])));
  const totals = cum[0] ?? new Map<string, number>();
  const ranked = [...totals.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([k]) => k);
  const kept = ranked.slice(0, top);
  const folded = ranked.slice(top);
  const dayValue = (i: number, key: string) => Math.max(0, (cum[i]!.get(key) ?? 0) - (cum[i + 1]?.get(key) ?? 0));
  // Every day from the first to the last with spend, so a line never bridges a day without any (0 there).
  const starts = days.map((d) => Date.parse(d));
  const at = new Map(starts.map((t, i) => [t, i]));
  const x: number[] = [];
  for (let t = starts[0] ?? 0; starts.length > 0 && t <= starts[starts.length - 1]!; t += DAY_MS) x.push(t / 1000);
  const valuesOf = (f: (i: number) => number) => x.map((sec) => {
    const i = at.get(sec * 1000);
    return i === undefined ? 0 : f(i) / 1_000_000;
  });
  const series = kept.map((k) => ({ name: label(k), values: valuesOf((i) => dayValue(i, k)) }));
  if (folded.length > 0) series.push({ name: `other (${folded.length})`, values: valuesOf((i) => folded.reduce((s, k) => s + dayValue(i, k), 0)) });
  return { x, series };
}

/**
 * The days the window picker's time axis spans: UTC midnight of the window's first day (that of
 * {@link windowStart}) and of today, in epoch seconds (the chart's unit), `days - 1` days apart.
 * `windowSpan(7, Date.UTC(2026, 11, 2, 4))` → [Nov 26, Dec 2] at 00:00 UTC.
 */
export function windowSpan(days: number, now = Date.now()): [number, number] {
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  return [(today - (days - 1) * DAY_MS) / 1000, today / 1000];
}

/** `since` for the window picker: UTC midnight `n` days before `now` (ISO-8601), so whole days are summed. */
export function windowStart(days: number, now = Date.now()): string {
  return new Date(Math.floor(now / DAY_MS) * DAY_MS - (days - 1) * DAY_MS).toISOString();
}
