import type { EventBody } from '../../protocol/index.js';
import { cutLogLine, truncatedLineText, type Line } from '../lines.js';
import { cutBytes, LOG_LINE_LIMIT_CHARS, TOOL_OUTPUT_LIMIT_BYTES } from './claude-stream.js';
import { CodexRollout, type CodexCallUsage } from './codex-rollout.js';
import type { HarnessOutcome, HarnessParser } from './types.js';

const SUMMARY_LIMIT_CHARS = 20_000;
/** Longest a tool result waits for its model call's token count in the rollout, ms. */
export const HOLD_MS = 3000;
type Json = Record<string, unknown>;

/** What the parser reports in `harness.started`. */
export interface CodexStreamInfo {
  pid: number;
  workspace?: string;
  branch?: string;
  /**
   * The job's CODEX_HOME: when given, per-model-call usage is read from the thread's rollout
   * file ({@link CodexRollout}) so `usage` events come one per call, as Claude Code's do.
   */
  codexHome?: string;
  /** Epoch ms the process started (rollout entries before it belong to earlier runs). Default now. */
  startedAt?: number;
  /** Model named in `usage` events (the job's `model` setting). */
  model?: string;
}

/**
 * Parses `codex exec --json` lines (event shapes from the team's harness-facts.md, Codex
 * 0.171.0) into the same job events as Claude Code's:
 * - `thread.started {thread_id}` → `harness.started` (session id = thread id), once;
 * - `item.started` / `item.completed` of a `command_execution` → `tool.call` + `tool.result`
 *   of tool `Bash` (output = `aggregated_output`, error when `exit_code` ≠ 0; cut at 64 KiB);
 * - `item.completed` `agent_message` → `message`; `error` items → `log` (stderr);
 * - usage: one `usage` event per model call, in Claude Code's order (after the call's tool
 *   call and before its tool result; the last call's after its message). The per-call counts
 *   come from the thread's rollout file ({@link CodexRollout}), which Codex may write a little
 *   after the command finished: until the count is there the tool result (and what follows)
 *   is held back, at most {@link HOLD_MS}, re-checked by {@link tick} (once a hold timed out
 *   before any count was read, none is held again in that run). At `turn.completed`
 *   whatever of the reported total the rollout did not account for follows as one more
 *   `usage` (the whole total when there is no readable rollout). Codex 0.171.0 reports the
 *   THREAD's cumulative usage there (a resumed thread includes the earlier runs), so the
 *   rollout's total before this run is subtracted. Codex counts cached tokens inside
 *   `input_tokens`: input = input − cached, cacheRead = cached;
 * - `turn.failed {error}` → the outcome: failed `budget` when the gateway refused for budget
 *   (`insufficient_quota`, Codex's own "Quota exceeded", 402, "budget"), its error saying the
 *   Flotilla gateway refused it, else failed `error`;
 * - other lines → `log` events. Exit 0 without `turn.failed` → succeeded.
 */
export class CodexJsonParser implements HarnessParser {
  private sessionId: string | undefined;
  private started = false;
  private lastText: string | undefined;
  private failure: string | null = null;
  private readonly called = new Set<string>();
  private readonly stderrTail: string[] = [];
  private readonly rollout: CodexRollout | null;
  /** Usage already emitted by this run, tokens. */
  private sum: CodexCallUsage = { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0 };
  /** `usage` events already emitted by this run. */
  private calls = 0;
  /** A tool call was emitted and its model call's usage not yet. */
  private awaitingUsage = false;
  /** Usages read from the rollout ahead of their call's output (see release). */
  private readonly pending: EventBody[] = [];
  /** Events held back until the current model call's usage is known (null: none held). */
  private held: EventBody[] | null = null;
  private heldSince = 0;
  /** Set when a hold timed out before the rollout ever gave a count: hold no more this run. */
  private noHold = false;
  readonly fatal = false;

  constructor(private readonly info: CodexStreamInfo) {
    this.rollout = info.codexHome ? new CodexRollout(info.codexHome, info.startedAt ?? Date.now()) : null;
  }

  stdout(line: Line): EventBody[] {
    // A hold this very line started (its tool result) comes after the line's other events.
    const wasHeld = this.held !== null;
    const events = this.parse(line);
    return wasHeld ? this.pass(events) : events;
  }

  /** Re-checks the rollout for held events; releases them without usage after {@link HOLD_MS}. */
  tick(now = Date.now()): EventBody[] {
    if (!this.held) return [];
    const out = this.pass([]);
    if (out.length || !this.held || now - this.heldSince < HOLD_MS) return out;
    // No count in time: a rollout that never gave one (another Codex version?) is not waited for again.
    if (this.calls === 0) this.noHold = true;
    return this.release([]);
  }

  /** Whatever is still held back (called once the output ended). */
  flush(): EventBody[] {
    const out = this.held ? this.release(this.callUsages()) : [];
    return [...out, ...this.drainPending()];
  }

  /** Routes new events through the hold: released (after their usage) once the rollout has it. */
  private pass(events: EventBody[]): EventBody[] {
    if (!this.held) return events;
    const usages = this.callUsages();
    if (usages.length === 0) {
      this.held.push(...events);
      return [];
    }
    return [...this.release(usages), ...events];
  }

  /**
   * The first usage (the held call's), then the held events. Later usages belong to model
   * calls whose output (message or tool call) has not been parsed yet: they wait in
   * `pending` and follow that output ({@link drainPending}), as in Claude Code's order.
   */
  private release(usages: EventBody[]): EventBody[] {
    const held = this.held ?? [];
    this.held = null;
    this.pending.push(...usages.slice(1));
    return [...usages.slice(0, 1), ...held];
  }

  /** Usages of calls whose output has now been emitted. */
  private drainPending(): EventBody[] {
    return this.pending.splice(0);
  }

  private parse(line: Line): EventBody[] {
    if (line.truncated) return [log('stdout', truncatedLineText(line, LOG_LINE_LIMIT_CHARS))];
    if (line.text.trim() === '') return [];
    let msg: unknown;
    try {
      msg = JSON.parse(line.text);
    } catch {
      return [log('stdout', line.text)];
    }
    if (!isObject(msg) || typeof msg.type !== 'string') return [log('stdout', line.text)];
    switch (msg.type) {
      case 'thread.started':
        if (typeof msg.thread_id === 'string') {
          this.sessionId = msg.thread_id;
          this.rollout?.setThread(msg.thread_id);
        }
        if (this.started) return [];
        this.started = true;
        return [
          {
            type: 'harness.started',
            data: {
              harness: 'codex',
              pid: this.info.pid,
              ...(this.sessionId ? { sessionId: this.sessionId } : {}),
              ...(this.info.workspace ? { workspace: this.info.workspace } : {}),
              ...(this.info.branch ? { branch: this.info.branch } : {}),
            },
          },
        ];
      case 'item.started':
        return isObject(msg.item) ? this.onItem(msg.item, false) : [];
      case 'item.completed':
        return isObject(msg.item) ? this.onItem(msg.item, true) : [];
      case 'turn.completed': {
        const out = this.held ? this.release(this.callUsages()) : this.callUsages();
        out.push(...this.drainPending());
        const u = isObject(msg.usage) ? msg.usage : {};
        const before = this.rollout?.priorTotal() ?? { inputTokens: 0, cachedInputTokens: 0, outputTokens: 0 };
        const rest: CodexCallUsage = {
          inputTokens: Math.max(0, count(u.input_tokens) - before.inputTokens - this.sum.inputTokens),
          cachedInputTokens: Math.max(0, count(u.cached_input_tokens) - before.cachedInputTokens - this.sum.cachedInputTokens),
          outputTokens: Math.max(0, count(u.output_tokens) - before.outputTokens - this.sum.outputTokens),
        };
        if (this.calls === 0 || rest.inputTokens + rest.cachedInputTokens + rest.outputTokens > 0) {
          out.push(this.usage(rest));
          this.add(rest);
        }
        return out;
      }
      case 'turn.failed': {
        const e = isObject(msg.error) ? msg.error : {};
        this.failure = typeof e.message === 'string' ? e.message : JSON.stringify(msg.error ?? 'turn failed');
        return [];
      }
      default:
        return [];
    }
  }

  stderr(line: Line): EventBody[] {
    if (line.text.trim() === '') return [];
    this.stderrTail.push(line.text.slice(0, 1000));
    if (this.stderrTail.length > 20) this.stderrTail.shift();
    return [log('stderr', line.text)];
  }

  finish(exit: { code: number | null; signal: string | null; spawnError?: Error }): HarnessOutcome {
    const sessionId = this.sessionId;
    if (exit.spawnError) {
      return { status: 'failed', reason: 'harness_start', error: `cannot start codex: ${exit.spawnError.message}. Install @openai/codex on the runner (npm install @openai/codex@0.171.0) or put codex on its PATH.` };
    }
    const summary = this.lastText?.slice(0, SUMMARY_LIMIT_CHARS);
    if (this.failure !== null) {
      // Codex 0.171 words the gateway's 429 insufficient_quota as "Quota exceeded. Check your plan
      // and billing details.", which read as the OpenAI account's fault (fresh-tester finding)
      const budget = /insufficient_quota|quota exceeded|budget|\b402\b/i.test(this.failure);
      const error = budget ? `codex stopped: the Flotilla model gateway refused a call for its job tree's budget (codex says: ${this.failure})` : `codex failed: ${this.failure}`;
      return { status: 'failed', reason: budget ? 'budget' : 'error', error: error.slice(0, SUMMARY_LIMIT_CHARS), summary, sessionId };
    }
    if (exit.code === 0) return { status: 'succeeded', summary, sessionId };
    const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
    const tail = this.stderrTail.slice(-5).join('\n');
    return { status: 'failed', reason: 'error', error: `codex ${how}${tail ? `: ${tail}` : ' (no stderr output)'}`, summary, sessionId };
  }

  /** `usage` events for the model calls the rollout recorded since the last look. */
  private callUsages(): EventBody[] {
    return (this.rollout?.next() ?? []).map((c) => {
      this.add(c);
      return this.usage(c);
    });
  }

  private add(c: CodexCallUsage): void {
    this.calls++;
    this.awaitingUsage = false;
    this.sum = {
      inputTokens: this.sum.inputTokens + c.inputTokens,
      cachedInputTokens: this.sum.cachedInputTokens + c.cachedInputTokens,
      outputTokens: this.sum.outputTokens + c.outputTokens,
    };
  }

  private usage(c: CodexCallUsage): EventBody {
    const cached = Math.min(c.cachedInputTokens, c.inputTokens);
    return {
      type: 'usage',
      data: { inputTokens: c.inputTokens - cached, outputTokens: c.outputTokens, cacheReadTokens: cached, cacheWriteTokens: 0, ...(this.info.model ? { model: this.info.model } : {}) },
    };
  }

  private onItem(item: Json, completed: boolean): EventBody[] {
    const id = typeof item.id === 'string' ? item.id : 'item';
    const type = item.type ?? item.item_type;
    if (type === 'command_execution') {
      const out: EventBody[] = [];
      if (!this.called.has(id)) {
        this.called.add(id);
        this.awaitingUsage = true;
        out.push({ type: 'tool.call', data: { id, name: 'Bash', input: { command: typeof item.command === 'string' ? item.command : '' } } });
        out.push(...this.drainPending());
      }
      if (completed) {
        if (!this.held) out.push(...this.callUsages());
        const { text, truncated } = cutBytes(typeof item.aggregated_output === 'string' ? item.aggregated_output : '', TOOL_OUTPUT_LIMIT_BYTES);
        const isError = (typeof item.exit_code === 'number' && item.exit_code !== 0) || item.status === 'failed' || item.status === 'declined';
        const result: EventBody = { type: 'tool.result', data: { id, name: 'Bash', output: text, isError, ...(truncated ? { truncated: true } : {}) } };
        if (this.awaitingUsage && this.rollout && !this.held && !this.noHold) {
          // Codex writes the call's token count a little after the command ended: wait for it.
          this.held = [result];
          this.heldSince = Date.now();
        } else out.push(result);
      }
      return out;
    }
    if (!completed) return [];
    if (type === 'agent_message' && typeof item.text === 'string') {
      this.lastText = item.text;
      return [{ type: 'message', data: { role: 'assistant', text: item.text } }, ...this.drainPending()];
    }
    if (type === 'error' && typeof item.message === 'string') return [log('stderr', `codex: ${item.message}`)];
    return [];
  }
}

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function count(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : 0;
}

function log(stream: 'stdout' | 'stderr', text: string): EventBody {
  return { type: 'log', data: { stream, line: cutLogLine(text, LOG_LINE_LIMIT_CHARS) } };
}
