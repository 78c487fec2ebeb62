// Display formats. Money arrives as integer micro-dollars (µ$) from the API.

/** µ$ → `$1.2345` (4 decimals under $10, else 2). The same arithmetic the CLI's cost table uses: µ$ / 1e6. */
export function usd(micros: number): string {
  const d = micros / 1_000_000;
  return `$${d.toFixed(Math.abs(d) < 10 ? 4 : 2)}`;
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

/** A job's run time: started → finished (or now while running). */
export function jobDuration(j: { startedAt: string | null; finishedAt: string | null }, now = Date.now()): string {
  if (!j.startedAt) return '—';
  return duration((j.finishedAt ? Date.parse(j.finishedAt) : now) - Date.parse(j.startedAt));
}

/** `{os: "linux"}` → `os=linux`. */
export function labelsText(labels: Record<string, string>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}
