import type { EventBody } from '../../protocol/index.js';
import type { Line } from '../lines.js';
import { cutBytes, LOG_LINE_LIMIT_CHARS, TOOL_OUTPUT_LIMIT_BYTES } from './claude-stream.js';
import type { HarnessOutcome, HarnessParser } from './types.js';

const SUMMARY_LIMIT_CHARS = 20_000;
type Json = Record<string, unknown>;

/** What the parser reports in `harness.started`. */
export interface CodexStreamInfo {
  pid: number;
  workspace?: string;
  branch?: string;
}

/**
 * Parses `codex exec --json` lines (event shapes from the team's harness-facts.md, Codex
 * 0.171.0) into the same job events as Claude Code's:
 * - `thread.started {thread_id}` → `harness.started` (session id = thread id), once;
 * - `item.started` / `item.completed` of a `command_execution` → `tool.call` + `tool.result`
 *   of tool `Bash` (output = `aggregated_output`, error when `exit_code` ≠ 0; cut at 64 KiB);
 * - `item.completed` `agent_message` → `message`; `error` items → `log` (stderr);
 * - `turn.completed {usage}` → `usage` (Codex counts cached tokens inside `input_tokens`:
 *   input = input − cached, cacheRead = cached);
 * - `turn.failed {error}` → the outcome: failed `budget` when the gateway refused for budget
 *   (`insufficient_quota`, 402, "budget"), else failed `error`;
 * - other lines → `log` events. Exit 0 without `turn.failed` → succeeded.
 */
export class CodexJsonParser implements HarnessParser {
  private sessionId: string | undefined;
  private started = false;
  private lastText: string | undefined;
  private failure: string | null = null;
  private readonly called = new Set<string>();
  private readonly stderrTail: string[] = [];
  readonly fatal = false;

  constructor(private readonly info: CodexStreamInfo) {}

  stdout(line: Line): EventBody[] {
    if (line.truncated) return [log('stdout', `[line of ${Buffer.byteLength(line.text) + line.droppedBytes} bytes truncated, not parsed] ${line.text}`)];
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
        if (typeof msg.thread_id === 'string') this.sessionId = msg.thread_id;
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
        const u = isObject(msg.usage) ? msg.usage : {};
        const cached = count(u.cached_input_tokens);
        return [{ type: 'usage', data: { inputTokens: Math.max(0, count(u.input_tokens) - cached), outputTokens: count(u.output_tokens), cacheReadTokens: cached, cacheWriteTokens: 0 } }];
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
      const budget = /insufficient_quota|budget|\b402\b/i.test(this.failure);
      return { status: 'failed', reason: budget ? 'budget' : 'error', error: `codex failed: ${this.failure}`.slice(0, SUMMARY_LIMIT_CHARS), summary, sessionId };
    }
    if (exit.code === 0) return { status: 'succeeded', summary, sessionId };
    const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
    const tail = this.stderrTail.slice(-5).join('\n');
    return { status: 'failed', reason: 'error', error: `codex ${how}${tail ? `: ${tail}` : ' (no stderr output)'}`, summary, sessionId };
  }

  private onItem(item: Json, completed: boolean): EventBody[] {
    const id = typeof item.id === 'string' ? item.id : 'item';
    const type = item.type ?? item.item_type;
    if (type === 'command_execution') {
      const out: EventBody[] = [];
      if (!this.called.has(id)) {
        this.called.add(id);
        out.push({ type: 'tool.call', data: { id, name: 'Bash', input: { command: typeof item.command === 'string' ? item.command : '' } } });
      }
      if (completed) {
        const { text, truncated } = cutBytes(typeof item.aggregated_output === 'string' ? item.aggregated_output : '', TOOL_OUTPUT_LIMIT_BYTES);
        const isError = (typeof item.exit_code === 'number' && item.exit_code !== 0) || item.status === 'failed' || item.status === 'declined';
        out.push({ type: 'tool.result', data: { id, name: 'Bash', output: text, isError, ...(truncated ? { truncated: true } : {}) } });
      }
      return out;
    }
    if (!completed) return [];
    if (type === 'agent_message' && typeof item.text === 'string') {
      this.lastText = item.text;
      return [{ type: 'message', data: { role: 'assistant', text: item.text } }];
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
  return { type: 'log', data: { stream, line: text.length > LOG_LINE_LIMIT_CHARS ? `${text.slice(0, LOG_LINE_LIMIT_CHARS)}…` : text } };
}
