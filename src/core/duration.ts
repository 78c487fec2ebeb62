const UNITS_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * Parses a duration like `90s`, `15m`, `1h`, `2d` (a positive integer and one unit) into
 * milliseconds; `off` and `0` give 0 (disabled). Used by `flotilla up --hold-new-runners`.
 * @throws Error naming `what` and the accepted forms when `text` is none of these, or longer than 30 days.
 */
export function parseDurationMs(text: string, what: string): number {
  const t = text.trim().toLowerCase();
  if (t === 'off' || t === '0') return 0;
  const m = /^([1-9][0-9]{0,6})([smhd])$/.exec(t);
  const ms = m ? Number(m[1]) * UNITS_MS[m[2]!]! : NaN;
  if (!Number.isFinite(ms) || ms > 30 * UNITS_MS.d!) {
    throw new Error(`${what} must be a duration like 90s, 15m, 1h or 2d (at most 30d), or off; got ${JSON.stringify(text)}`);
  }
  return ms;
}
