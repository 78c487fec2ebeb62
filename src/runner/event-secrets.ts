import type { EventBody } from '../protocol/index.js';

/**
 * Masking the runner's secrets in the events it uploads (a job's transcript is readable by
 * anyone who can read the job, `GET /api/jobs/{id}/events`).
 *
 * The harness gets its job token (`flj_...`) as FLOTILLA_JOB_TOKEN and as its model API key, so
 * an agent that prints its environment (or a model running `env` in its Bash tool) puts the
 * token into stdout/stderr `log` lines, assistant messages, tool calls and results, and the
 * result summary. The runner knows the secrets that could appear — the job's token, its own
 * credential (`flc_...`) and its registration token (`flr_...`) — and replaces every occurrence
 * of each, in every string of every event (nested: tool-call inputs are objects), with its
 * prefix and `***` (`flj_***`) before the event enters the outbox.
 *
 * Cost when no secret is present (nearly always): one native `includes` per secret per string
 * of the event; objects are copied only along the path to a string that changed.
 */

/** What replaces `secret`: its kind prefix up to and including the first `_` (`flj_`), then `***`; `***` alone when it has none. */
export function maskedSecret(secret: string): string {
  const cut = secret.indexOf('_');
  return cut > 0 && cut <= 8 ? `${secret.slice(0, cut + 1)}***` : '***';
}

/** Secrets shorter than this are not masked (such a value is no secret, and masking it would garble ordinary text). */
export const MIN_SECRET_LENGTH = 8;

/** See the module comment. */
export class SecretMask {
  private readonly secrets: ReadonlyArray<{ text: string; mask: string }>;

  /** `secrets`: the values to hide (undefined, empty, short and repeated ones are ignored). */
  constructor(secrets: ReadonlyArray<string | undefined | null>) {
    const uniq = [...new Set(secrets.filter((s): s is string => typeof s === 'string' && s.length >= MIN_SECRET_LENGTH))];
    // Longest first: a secret that contains another is masked whole.
    uniq.sort((a, b) => b.length - a.length);
    this.secrets = uniq.map((text) => ({ text, mask: maskedSecret(text) }));
  }

  /** `s` with every secret masked (`s` itself when it holds none). */
  text(s: string): string {
    let out = s;
    for (const k of this.secrets) if (out.includes(k.text)) out = out.split(k.text).join(k.mask);
    return out;
  }

  /**
   * `v` with every secret masked in every string it holds (object keys too), arrays and plain
   * objects walked to any depth; the same value (not a copy) when nothing changed.
   */
  value<T>(v: T): T {
    return this.walk(v) as T;
  }

  /** The event with every secret masked in its strings (the same object when it holds none). */
  event(e: EventBody): EventBody {
    return this.secrets.length === 0 ? e : this.value(e);
  }

  private walk(v: unknown): unknown {
    if (typeof v === 'string') return this.text(v);
    if (typeof v !== 'object' || v === null) return v;
    if (Array.isArray(v)) {
      let out: unknown[] | null = null;
      for (let i = 0; i < v.length; i++) {
        const m = this.walk(v[i]);
        if (m !== v[i]) (out ??= v.slice())[i] = m;
      }
      return out ?? v;
    }
    let out: Record<string, unknown> | null = null;
    const src = v as Record<string, unknown>;
    for (const key of Object.keys(src)) {
      const m = this.walk(src[key]);
      const k = this.text(key);
      if (m === src[key] && k === key) continue;
      out ??= { ...src };
      if (k !== key) delete out[key];
      out[k] = m;
    }
    return out ?? v;
  }
}
