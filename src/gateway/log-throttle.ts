import type { Logger } from '../core/log.js';

/** Default window of {@link LogThrottle}, ms: at most one line per kind per 10 s. */
export const LOG_THROTTLE_WINDOW_MS = 10_000;

/**
 * Rate-limits a log line per kind of event (e.g. `unknown job token`): the first event of a kind
 * is logged, then at most one line per `windowMs` for that kind; each logged line carries
 * `suppressed`, the number of events of its kind dropped since the previous line. Anyone can
 * send bad tokens, as fast as they like: without this each one wrote a line (a disk- and
 * attention-filling flood). Memory: one entry per kind (kinds are a fixed, small set the caller
 * names; never put request data such as a token or path in the kind).
 */
export class LogThrottle {
  private readonly kinds = new Map<string, { lastAt: number; suppressed: number }>();

  /** @param now the clock, epoch ms (injectable for tests). */
  constructor(
    private readonly windowMs: number = LOG_THROTTLE_WINDOW_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Notes one event of `kind`. @returns the number of events of that kind suppressed since the
   * last line (0 or more) when a line should be written now, or -1 when this one is suppressed.
   */
  take(kind: string): number {
    const t = this.now();
    const k = this.kinds.get(kind);
    if (!k) {
      this.kinds.set(kind, { lastAt: t, suppressed: 0 });
      return 0;
    }
    if (t - k.lastAt < this.windowMs) {
      k.suppressed += 1;
      return -1;
    }
    const n = k.suppressed;
    k.lastAt = t;
    k.suppressed = 0;
    return n;
  }

  /**
   * Writes `log.warn(message, fields)` for an event of `kind` unless throttled ({@link take});
   * a line after suppressed ones gets `suppressed: <count>` added. `fields` must hold no secret.
   */
  warn(log: Logger, kind: string, message: string, fields: Record<string, unknown> = {}): void {
    const n = this.take(kind);
    if (n < 0) return;
    log.warn(message, n > 0 ? { ...fields, suppressed: n } : fields);
  }
}
