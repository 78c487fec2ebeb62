/**
 * JSON text of a string, as `JSON.stringify(s)` writes it (RFC 8259 §7), without calling it for
 * the common case: a string of printable ASCII but `"` and `\` needs no escape, so it is only
 * quoted. JSON.stringify's own work was ~2–8k instructions per short object on the gateway's
 * per-call path (a reservation's pending call, the log line; callgrind, 2026-12-08).
 */
export function jsonString(s: string): string {
  return PLAIN.test(s) ? `"${s}"` : JSON.stringify(s);
}

/** Strings JSON.stringify writes between quotes unchanged: printable ASCII (U+0020–U+007E) but `"` and `\`. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** JSON text of a number, as JSON.stringify writes it: `null` for NaN and ±Infinity, `0` for -0 (String gives the same for every other number). */
export function jsonNumber(n: number): string {
  return Number.isFinite(n) ? String(n) : 'null';
}
