/**
 * The worst case, µ$, of the call a budget refusal was for, read from the refusal's text (the
 * gateway's budget message, which a job paused for budget keeps as its error: "... this call may
 * cost up to $0.010100. ..."; six decimals, as core/money.ts formatMicros writes them). The
 * call's own worst case, not grown for a resumed harness's larger request. Null when the text
 * names none.
 */
export function refusedCallMicros(reason: string | null): number | null {
  const m = reason ? /this call may cost up to \$(\d{1,9})\.(\d{6})\b/.exec(reason) : null;
  return m ? Number(m[1]) * 1_000_000 + Number(m[2]) : null;
}
