import { closeSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** One model call's tokens as Codex records them (input includes cached input). Tokens. */
export interface CodexCallUsage {
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
}

/** Largest slice of the rollout read at once, bytes. */
const READ_CHUNK_BYTES = 1 << 20;

/**
 * Reads the per-model-call token counts of one Codex thread from its rollout file,
 * `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl` (Codex 0.171.0 writes an
 * `{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{...}}}}`
 * line after every model response; `codex exec --json` itself reports usage only once per
 * turn). Used so that the codex harness can emit one `usage` event per model call, in the
 * same place Claude Code's stream puts it.
 *
 * Reads incrementally (a byte offset; a partial last line waits for the next read) and keeps
 * only entries stamped at or after `sinceMs` (epoch ms; a resumed thread's file already holds
 * the earlier runs' entries). Never throws: a missing or unreadable file yields nothing, and
 * the caller falls back on the turn's total.
 */
export class CodexRollout {
  private threadId: string | null = null;
  private file: string | null = null;
  private offset = 0;
  private rest = '';
  private prior: CodexCallUsage = { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0 };

  constructor(
    private readonly codexHome: string,
    private readonly sinceMs: number,
  ) {}

  /** The thread whose rollout to read (from `thread.started`). */
  setThread(threadId: string): void {
    if (this.threadId === threadId) return;
    this.threadId = threadId;
    this.file = null;
    this.offset = 0;
    this.rest = '';
    this.prior = { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0 };
  }

  /**
   * The thread's cumulative usage before this run (`total_token_usage` of the last entry
   * stamped before `sinceMs`; zeros for a new thread), as far as read so far. Tokens.
   */
  priorTotal(): CodexCallUsage {
    this.pending.push(...this.next());
    return this.prior;
  }

  /** Counts read by {@link priorTotal} and not yet handed out by {@link next}. */
  private readonly pending: CodexCallUsage[] = [];

  /** Token counts of the model calls recorded since the last call of this method, in order. */
  next(): CodexCallUsage[] {
    const out = this.pending.splice(0);
    return out.concat(this.read());
  }

  private read(): CodexCallUsage[] {
    if (!this.threadId) return [];
    try {
      this.file ??= findRollout(join(this.codexHome, 'sessions'), this.threadId);
      if (!this.file) return [];
      const size = statSync(this.file).size;
      if (size <= this.offset) return [];
      const fd = openSync(this.file, 'r');
      let text = '';
      try {
        const buf = Buffer.alloc(Math.min(READ_CHUNK_BYTES, size - this.offset));
        while (this.offset < size) {
          const n = readSync(fd, buf, 0, Math.min(buf.length, size - this.offset), this.offset);
          if (n <= 0) break;
          this.offset += n;
          text += buf.toString('latin1', 0, n);
        }
      } finally {
        closeSync(fd);
      }
      // latin1 keeps byte offsets exact; the JSON we look at is ASCII.
      const lines = (this.rest + text).split('\n');
      this.rest = lines.pop() ?? '';
      return lines.flatMap((l) => this.tokenCount(l));
    } catch {
      return [];
    }
  }

  private tokenCount(line: string): CodexCallUsage[] {
    if (!line.includes('"token_count"')) return [];
    let o: unknown;
    try {
      o = JSON.parse(line);
    } catch {
      return [];
    }
    const rec = o as { timestamp?: unknown; payload?: { type?: unknown; info?: { last_token_usage?: Record<string, unknown>; total_token_usage?: Record<string, unknown> } | null } };
    if (rec.payload?.type !== 'token_count') return [];
    const at = typeof rec.timestamp === 'string' ? Date.parse(rec.timestamp) : NaN;
    if (!(at >= this.sinceMs)) {
      const t = rec.payload.info?.total_token_usage;
      if (t) this.prior = usageOf(t);
      return [];
    }
    const u = rec.payload.info?.last_token_usage;
    if (!u) return [];
    return [usageOf(u)];
  }
}

/** The rollout file of `threadId` under `sessionsDir`, or null when there is none (yet). */
function findRollout(sessionsDir: string, threadId: string): string | null {
  let names: string[];
  try {
    names = readdirSync(sessionsDir, { recursive: true, encoding: 'utf8' });
  } catch {
    return null;
  }
  const suffix = `-${threadId}.jsonl`;
  const hit = names.find((n) => n.endsWith(suffix) && /(^|\/)rollout-[^/]*$/.test(n));
  return hit ? join(sessionsDir, hit) : null;
}

function usageOf(u: Record<string, unknown>): CodexCallUsage {
  return { inputTokens: count(u.input_tokens), cachedInputTokens: count(u.cached_input_tokens), outputTokens: count(u.output_tokens) };
}

function count(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : 0;
}
