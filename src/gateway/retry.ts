/**
 * Upstream retries (issue 3, "upstream failures"): only where the provider allows it, with a
 * FIXED total — `retries` N means at most N+1 upstream calls for one client call, and when the
 * gateway gives up the reply carries `x-should-retry: false` so the harness does not retry it
 * again (no second retry layer multiplying the count).
 *
 * Retried: 408, 409, 429, 500, 502, 503, 504, 529 and connection errors before any reply —
 * unless the upstream said `x-should-retry: false` (an OpenAI 429 `insufficient_quota` is no rate
 * limit: the routes' `keyRefused` treats it as a refused key, upstream-auth.ts). Delay: `retry-after` (seconds or an HTTP date; `retry-after-ms`
 * too) when given, capped at `maxDelayMs`; else `baseMs × 2^attempt` with ±50 % jitter.
 * Keys: each call's first attempt takes the next key round-robin, and each retry another key than
 * the one that just failed (one the call has not tried first); a reply asking for a wait past
 * `maxDelayMs` goes at once to a key in service the call has not tried, when there is one (the
 * wait is that key's). A rate-limit 429 that asks for a wait (`retry-after` above 0) rests its
 * key for that wait, at most {@link KEY_REFUSED_SKIP_MS}: the ring gives new calls other keys
 * meanwhile ({@link KeyRing.rest}; a fresh tester: a key answering `retry-after: 30` still took
 * every other call's first attempt). A 529 (the provider's overload, not the key's) or a 429
 * without a wait does not take a key out of service (the next call may use it again). An
 * upstream 401/403 (the provider refused that
 * key: revoked, expired, without access) does: the ring skips the key for
 * {@link KEY_REFUSED_SKIP_MS}, and the same client call fails over at once (no backoff) to a key
 * it has not tried yet, as one of its retries (never past N+1 upstream calls: with retries 0
 * there is no failover); only when every key the call tried was refused does the 401/403 come
 * back (the routes map it to a 500 naming the setting, upstream-auth.ts): a call that met an
 * overload or a rate limit on another key gets that reply (kept while the retry went out), as
 * the provider sent it. A refused or resting key that answers a call without refusing it is back
 * in service at once ({@link KeyRing.serving}).
 * A retryable reply the gateway gives up on after such a failover (e.g. key A 401, then key B
 * 529 until the retries run out) carries no `x-should-retry: false`: the overload did not get
 * every retry (the refused key took one), so it reaches the client as the provider sent it
 * (Anthropic: 529 `overloaded_error`, which Claude Code retries) and the harness's next call —
 * at most 1 + N upstream calls again, the refused key now skipped — gets them all.
 */
export interface RetryPolicy {
  /** Retries after the first call (default 2 → at most 3 upstream calls). */
  retries: number;
  /** Backoff base, ms (default 250). */
  baseMs: number;
  /** Longest wait between attempts, ms (default 10,000); a longer retry-after ends the retries. */
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { retries: 2, baseMs: 250, maxDelayMs: 10_000 };

const RETRYABLE = new Set([408, 409, 429, 500, 502, 503, 504, 529]);

/** The keys of a comma-separated setting (ANTHROPIC_API_KEY=a,b), trimmed, empty ones dropped. */
export function splitKeys(text: string | undefined): string[] {
  return (text ?? '')
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean);
}

/**
 * How long a key the provider refused (upstream 401/403) is skipped by its {@link KeyRing}, in
 * ms (60 s): a revoked key costs at most one upstream call per minute, and a key refused by a
 * passing fault comes back by itself.
 */
export const KEY_REFUSED_SKIP_MS = 60_000;

/**
 * Round-robin over the provider's keys, shared by every call of one gateway. A key marked
 * {@link KeyRing.refuse | refused} is skipped for {@link KEY_REFUSED_SKIP_MS}, one
 * {@link KeyRing.rest | resting} for the wait its rate limit asked (at most as long), unless every
 * key is skipped (then the one back in service soonest is taken); a skipped key that answers a
 * call without refusing it is back in service ({@link KeyRing.serving}).
 */
export class KeyRing {
  private next = 0;
  private readonly keys: readonly string[];
  /** Per position: until when (epoch ms) it is skipped; 0 = in service. */
  private readonly skippedUntil: number[];
  private readonly now: () => number;
  private readonly skipMs: number;
  /**
   * `keys`: the provider's keys. An entry holding a comma-separated list (a setting passed on
   * unsplit) is split, so an upstream call never gets more than one key; a key listed twice
   * counts once. `opts.now` (epoch ms; default Date.now) and `opts.skipMs` (default
   * {@link KEY_REFUSED_SKIP_MS}) are for tests.
   */
  constructor(keys: readonly string[], opts: { now?: () => number; skipMs?: number } = {}) {
    this.keys = [...new Set(keys.flatMap(splitKeys))];
    this.skippedUntil = this.keys.map(() => 0);
    this.now = opts.now ?? Date.now;
    this.skipMs = opts.skipMs ?? KEY_REFUSED_SKIP_MS;
  }
  /** How many keys rotate (0: the provider has none). */
  get size(): number {
    return this.keys.length;
  }
  /** The next key ('' when there are none). */
  take(): string {
    const p = this.pick();
    return p === null ? '' : this.keys[p]!;
  }
  /**
   * The position (0-based) of the next key round-robin, not one in `avoid`, one in service
   * before a skipped one (a skipped one only when no other is left, and never with
   * `inServiceOnly`); the ring moves past it.
   * @returns null when there is none (no keys, or every position in `avoid`, or skipped).
   */
  pick(avoid: ReadonlySet<number> = new Set(), inServiceOnly = false): number | null {
    const now = this.now();
    let skipped: number | null = null;
    for (let step = 0; step < this.keys.length; step++) {
      const p = (this.next + step) % this.keys.length;
      if (avoid.has(p)) continue;
      if (this.skippedUntil[p]! <= now) return this.use(p);
      // of the skipped ones, the one back in service soonest (a key resting for a short
      // retry-after before one refused for a minute: a fresh tester's calls went to the refused one)
      if (skipped === null || this.skippedUntil[p]! < this.skippedUntil[skipped]!) skipped = p;
    }
    return skipped === null || inServiceOnly ? null : this.use(skipped);
  }
  /** Whether a key in service is not in `avoid`, without moving the ring. */
  hasInService(avoid: ReadonlySet<number>): boolean {
    const now = this.now();
    for (let p = 0; p < this.keys.length; p++) if (!avoid.has(p) && this.skippedUntil[p]! <= now) return true;
    return false;
  }
  /** The key at `position` (from {@link pick}). */
  keyAt(position: number): string {
    return this.keys[position] ?? '';
  }
  /** The provider refused the key at `position` (401/403): skipped from now for the skip time. */
  refuse(position: number): void {
    if (position >= 0 && position < this.keys.length) this.skippedUntil[position] = this.now() + this.skipMs;
  }
  /**
   * The key at `position` answered a call without refusing it (any reply but a refusal, or a
   * rate limit asking for a wait): back in service at once if it was skipped (a fresh tester:
   * after every key had been refused, one that served calls again still counted as refused for
   * the rest of the minute, so each call went first to the key still refused).
   */
  serving(position: number): void {
    if (this.skippedUntil[position]! > 0) this.skippedUntil[position] = 0;
  }
  /**
   * The key at `position` was asked to wait `waitMs` (a rate-limit 429's `retry-after`): skipped
   * from now for that wait, at most the skip time, as a refused key is (never shortened: a
   * refusal's skip stays whole).
   */
  rest(position: number, waitMs: number): void {
    if (position < 0 || position >= this.keys.length || !(waitMs > 0)) return;
    this.skippedUntil[position] = Math.max(this.skippedUntil[position]!, this.now() + Math.min(waitMs, this.skipMs));
  }
  private use(p: number): number {
    this.next = (p + 1) % this.keys.length;
    return p;
  }
}

/** A key the provider refused (401/403) during {@link withRetries}: its position in the ring (1-based) of `keys`, and the status. No key text. */
export interface KeyRefusal {
  position: number;
  keys: number;
  status: number;
}

/** Wait in ms the reply asks for (`retry-after-ms`, `retry-after` seconds or HTTP date), or null. */
export function retryAfterMs(h: Headers, now = Date.now()): number | null {
  return retryAfterOf((n) => h.get(n), now);
}

/**
 * {@link retryAfterMs} over any header lookup (`get(name)` → value or null/undefined).
 * `retry-after` is delay-seconds or an HTTP-date (RFC 9110 §10.2.3, §5.6.7: every HTTP-date
 * form starts with a day name); anything else counts as absent, so the usual backoff applies:
 * a negative number (Date.parse reads `-5` as the year -5, a date past, no wait at all), `- 5`,
 * or two headers joined (`5, 5` and `-5, 1` read as dates of 2001).
 */
export function retryAfterOf(get: (name: string) => string | null | undefined, now = Date.now()): number | null {
  const raw = get('retry-after-ms');
  const ms = Number(raw);
  if (raw && Number.isFinite(ms) && ms >= 0) return ms;
  const ra = get('retry-after');
  if (!ra) return null;
  if (NUMERIC.test(ra)) {
    const s = Number(ra);
    return Number.isFinite(s) && s >= 0 ? s * 1000 : null;
  }
  if (!HTTP_DATE.test(ra)) return null;
  const t = Date.parse(ra);
  return Number.isFinite(t) ? Math.max(0, t - now) : null;
}

/** The start of an HTTP-date (IMF-fixdate `Sun, 06 Nov 1994 ...`, rfc850 `Sunday, 06-Nov-94 ...`, asctime `Sun Nov  6 ...`). */
const HTTP_DATE = /^\s*(Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*[, ]/i;

/** A value that is a number (any sign, decimals, exponent), not a date. */
const NUMERIC = /^\s*[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?\s*$/i;

/** How {@link withRetries} reads and changes a reply of type R (default: web Response). */
export interface ReplyOps<R> {
  status(r: R): number;
  header(r: R, name: string): string | null | undefined;
  /** Drops a reply that will be retried (closes its body). */
  discard(r: R): Promise<void>;
  /** A copy of r with header `name` set. */
  withHeader(r: R, name: string, value: string): R;
}

const RESPONSE_OPS: ReplyOps<Response> = {
  status: (r) => r.status,
  header: (r, n) => r.headers.get(n),
  discard: async (r) => void (await r.body?.cancel().catch(() => undefined)),
  withHeader: (r, n, v) => {
    const headers = new Headers(r.headers);
    headers.set(n, v);
    return new Response(r.body, { status: r.status, statusText: r.statusText, headers });
  },
};

/**
 * The key position of a retry after an attempt on `last` failed retryably: the ring's next key
 * in service this call has not tried, else one in service but `last` — so a call's retries go
 * to another key whatever other calls took from the shared ring meanwhile (a fresh tester: under
 * concurrency one call's three attempts all went to the key that kept answering 529 while the
 * other was healthy) — else the ring's next not refused in this call, as a first attempt's.
 */
function retryKey(keys: KeyRing, refused: ReadonlySet<number>, tried: ReadonlySet<number>, last: number): number | null {
  return keys.pick(new Set([...refused, ...tried]), true) ?? keys.pick(new Set([...refused, last]), true) ?? keys.pick(refused);
}

/**
 * Calls `attempt(key)` until it gives a non-retryable reply or the retries are used up.
 * Replies are web Responses unless `opts.ops` says how to read another type.
 * A reply refusing its key (`opts.keyRefused`, default: a 401/403; the routes add the provider's
 * billing refusals, upstream-auth.ts gatewayKeyRefusal) marks it refused ({@link KeyRing.refuse}; `opts.onKeyRefused` told its
 * position) and, while retries are left, the next attempt goes at once to a key this call has
 * not tried; with none left untried, to one that failed retryably before (after the usual
 * backoff); with none of those either, the 401/403 is the reply.
 * An attempt that throws an error marked `mayBeBilled` (the provider had the whole request and
 * gave no reply: upstream-http.ts UpstreamDroppedError) calls `opts.onMayBeBilled`, whatever
 * comes after it: the call may cost money even when a later attempt gets none.
 * A client that goes away (`opts.signal` aborted) during a wait between attempts ends the wait
 * at once, and nothing more goes upstream: the last reply is returned as it came (the route
 * records that upstream error unbilled, not a hang-up mid-call charged an estimate: fresh-user
 * finding, a 429 waited out then charged as if the upstream had worked on it).
 * @returns the last reply (with `x-should-retry: false` added when retries ran out on a
 *   retryable status and no key was refused during the call) and how many upstream calls were
 *   made (at most `policy.retries` + 1).
 * @throws the last connection error when every attempt failed to connect; at once, an error
 *   with `noRetry: true` (e.g. a 2xx reply over the size limit, upstream-http.ts), or any error
 *   once `opts.signal` is aborted.
 */
export async function withRetries<R = Response>(
  attempt: (key: string) => Promise<R>,
  keys: KeyRing,
  policy: RetryPolicy = DEFAULT_RETRY,
  opts: {
    signal?: { readonly aborted: boolean; addEventListener?(type: 'abort', listener: () => void, options?: { once?: boolean }): void; removeEventListener?(type: 'abort', listener: () => void): void };
    retryable?: (res: R) => boolean;
    sleep?: (ms: number) => Promise<void>;
    ops?: ReplyOps<R>;
    onKeyRefused?: (refusal: KeyRefusal) => void;
    keyRefused?: (res: R) => boolean;
    onMayBeBilled?: () => void;
  } = {},
): Promise<{ response: R; calls: number }> {
  const ops = opts.ops ?? (RESPONSE_OPS as unknown as ReplyOps<R>);
  const signal = opts.signal;
  // the wait between attempts ends early when the client goes away
  const sleep =
    opts.sleep ??
    ((ms: number) =>
      new Promise<void>((resolve) => {
        if (signal?.aborted) return resolve();
        const done = () => {
          clearTimeout(timer);
          signal?.removeEventListener?.('abort', done);
          resolve();
        };
        const timer = setTimeout(done, ms);
        signal?.addEventListener?.('abort', done, { once: true });
      }));
  let calls = 0;
  // ring positions this call used, and those the provider refused (401/403)
  const tried = new Set<number>();
  const refused = new Set<number>();
  // the position the next attempt uses (null: the ring's next one not refused in this call)
  let failover: number | null = null;
  let last: number | null = null;
  // the call's latest retryable reply (an overload, a rate limit) kept, not dropped, while a
  // retry goes out: when that retry's key is refused and no other is left to try, it is the
  // reply (the overload was the provider's; only that last key was refused), not the refusal
  let held: R | null = null;
  const drop = async (r: R | null) => {
    if (r !== null) await ops.discard(r);
  };
  /** `r` as the call's reply, the held one dropped unless it is `r`. */
  const reply = async (r: R): Promise<{ response: R; calls: number }> => {
    if (held !== null && held !== r) await drop(held);
    return { response: r, calls };
  };
  for (let i = 0; ; i++) {
    let res: R | null = null;
    let error: unknown = null;
    calls += 1;
    const position: number | null = failover ?? (i > 0 && last !== null && keys.size > 1 ? retryKey(keys, refused, tried, last) : keys.pick(refused));
    failover = null;
    last = position;
    if (position !== null) tried.add(position);
    try {
      res = await attempt(position === null ? '' : keys.keyAt(position));
    } catch (err) {
      if ((err as { mayBeBilled?: unknown } | null)?.mayBeBilled === true) opts.onMayBeBilled?.();
      // An error marked `noRetry` (upstream-http.ts ReplyTooLargeError of a 2xx: the provider
      // did the work and billed it; another call would bill it again) ends the retries at once.
      if (opts.signal?.aborted || (err as { noRetry?: unknown } | null)?.noRetry === true) {
        await drop(held);
        throw err;
      }
      error = err;
    }
    if (res !== null && position !== null && (opts.keyRefused ? opts.keyRefused(res) : ops.status(res) === 401 || ops.status(res) === 403)) {
      // The provider refused this key: out of service for a while, and another key at once.
      keys.refuse(position);
      refused.add(position);
      opts.onKeyRefused?.({ position: position + 1, keys: keys.size, status: ops.status(res) });
      // no attempt left, or no key: an earlier attempt's overload or rate limit is the reply
      // when there was one (a fresh tester: 529, 529, then 401 on the third key told the job an
      // admin must fix the key, never to retry); else this refusal (every key tried refused)
      const giveUp = async () => {
        if (held === null) return reply(res);
        await drop(res);
        return reply(held);
      };
      if (i >= policy.retries || opts.signal?.aborted) return giveUp();
      const untried = tried.size < keys.size ? keys.pick(tried) : null;
      const retried = untried === null ? keys.pick(refused) : null;
      if (untried === null && retried === null) return giveUp();
      failover = untried ?? retried;
      if (retried !== null) await sleep(Math.min(policy.baseMs * 2 ** i * (0.5 + Math.random()), policy.maxDelayMs));
      if (signal?.aborted) return giveUp();
      await ops.discard(res);
      continue;
    }
    // a key that answered without refusing is in service, whatever refused it before
    if (res !== null && position !== null) keys.serving(position);
    // The common case (a success, or an error no one retries): no backoff or retry-after to work out.
    if (res !== null && !RETRYABLE.has(ops.status(res))) return reply(res);
    const retryable = res !== null ? RETRYABLE.has(ops.status(res)) && ops.header(res, 'x-should-retry') !== 'false' && (opts.retryable?.(res) ?? true) : true;
    let wait = policy.baseMs * 2 ** i * (0.5 + Math.random());
    const got = res;
    const asked = got !== null ? retryAfterOf((n) => ops.header(got, n)) : null;
    // a zero wait is taken for none, as the Anthropic and OpenAI SDKs take it (they honour a
    // retry-after only above 0): the usual backoff, not 3 calls within 10 ms to an overloaded provider
    if (asked !== null && asked > 0) {
      wait = asked;
      // a rate limit asking for a wait: that key rests for it (a 529 is the provider's, not the key's)
      if (position !== null && got !== null && ops.status(got) === 429) keys.rest(position, asked);
    }
    // A wait longer than we hold a call for is that key's (its rate limit, its account): while
    // the call has a key in service it has not tried, it goes there at once (a fresh tester: one
    // key answering retry-after 30 failed half the calls while the other key was healthy).
    if (asked !== null && wait > policy.maxDelayMs && retryable && i < policy.retries && !opts.signal?.aborted && keys.hasInService(new Set([...tried, ...refused]))) {
      await drop(held);
      held = res;
      continue;
    }
    if (!retryable || i >= policy.retries || wait > policy.maxDelayMs || opts.signal?.aborted) {
      if (res === null) {
        await drop(held);
        throw error;
      }
      // We retried as much as allowed: the harness must not retry on top — unless a refused
      // key took some of the attempts: then the reply goes as the provider sent it (a 529
      // stays a retryable overload), and the harness's next call, without that key, gets the
      // full retries. A reply asking for a longer wait than we hold a call for (`retry-after`
      // past maxDelayMs) before our retries ran out goes as sent too, its retry-after kept:
      // we stopped short of N+1 calls, and the provider's own pacing is for the harness to
      // wait out (fresh-user findings: a 429 with retry-after 30 reached Claude Code as never to
      // be retried; and, after one retry of ours, still did).
      const waitedOut = asked !== null && i < policy.retries && wait > policy.maxDelayMs;
      if (retryable && refused.size === 0 && !waitedOut) return reply(ops.withHeader(res, 'x-should-retry', 'false'));
      return reply(res);
    }
    await sleep(Math.min(wait, policy.maxDelayMs));
    // the client went away while we waited: its last reply (or error) stands, nothing more goes upstream
    if (signal?.aborted) {
      if (res === null) {
        await drop(held);
        throw error;
      }
      return reply(res);
    }
    if (res !== null) {
      await drop(held);
      held = res;
    }
  }
}
