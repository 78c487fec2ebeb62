import type { EventBody } from '../../protocol/index.js';
import { cutLogLine, truncatedLineText, type Line } from '../lines.js';
import type { HarnessOutcome, HarnessParser } from './types.js';

/** Tool output longer than this (UTF-8 bytes) is cut and marked `truncated: true`. */
export const TOOL_OUTPUT_LIMIT_BYTES = 64 * 1024;
/** A `log` event carries at most this many characters of a line. */
export const LOG_LINE_LIMIT_CHARS = 8 * 1024;
/** JobResult.summary is at most 20,000 characters (protocol). */
const SUMMARY_LIMIT_CHARS = 20_000;
const STDERR_TAIL_LINES = 20;
const ROOT_REFUSAL = 'cannot be used with root/sudo privileges';

type Json = Record<string, unknown>;

/** What the stream-json parser reports in `harness.started`. */
export interface ClaudeStreamInfo {
  pid: number;
  workspace?: string;
  branch?: string;
  /** Harness name in events (default `claude-code`). */
  harness?: string;
}

/**
 * Parses Claude Code's `--output-format stream-json --verbose` lines (measured on 2.1.197):
 * - `system/init` → `harness.started` (pid, session id, workspace, branch), once;
 * - `system/api_retry` → `progress` (phase `harness`);
 * - `assistant` → `message` per text block, `tool.call` per tool_use block, and one `usage`
 *   per model message (the CLI repeats a message's usage on every content line: counted once
 *   per message id; the `<synthetic>` model's zeros are skipped);
 * - `user` tool_result → `tool.result` (name looked up from the tool_use id; text output cut
 *   to 64 KiB with `truncated: true`);
 * - `result` → the outcome: `success` without `is_error` → succeeded; `error_max_turns` →
 *   failed `max_turns`; an API error 402 → failed `budget`; anything else → failed `error`;
 * - non-JSON, truncated or invalid-UTF-8 lines → `log` events (never dropped silently);
 *   stderr lines → `log` events, the last 20 kept for the failure message.
 */
export class ClaudeStreamParser implements HarnessParser {
  private sessionId: string | undefined;
  private started = false;
  private readonly toolNames = new Map<string, string>();
  private readonly usageSeen = new Set<string>();
  private readonly stderrTail: string[] = [];
  private result: Json | null = null;
  private lastText: string | undefined;
  private refused = false;

  constructor(private readonly info: ClaudeStreamInfo) {}

  get fatal(): boolean {
    return this.refused;
  }

  stdout(line: Line): EventBody[] {
    if (line.truncated) {
      return [logEvent('stdout', truncatedLineText(line, LOG_LINE_LIMIT_CHARS))];
    }
    if (line.text.trim() === '') return [];
    let msg: unknown;
    try {
      msg = JSON.parse(line.text);
    } catch {
      return [logEvent('stdout', line.invalidUtf8 ? `[invalid UTF-8] ${line.text}` : line.text)];
    }
    if (!isObject(msg) || typeof msg.type !== 'string') return [logEvent('stdout', line.text)];
    switch (msg.type) {
      case 'system':
        return this.onSystem(msg);
      case 'assistant':
        return this.onAssistant(msg);
      case 'user':
        return this.onUser(msg);
      case 'result':
        this.result = msg;
        if (typeof msg.session_id === 'string') this.sessionId ??= msg.session_id;
        return [];
      default:
        return []; // stream_event, hook events, ...: not part of the job's record
    }
  }

  stderr(line: Line): EventBody[] {
    if (line.text.trim() === '') return [];
    this.stderrTail.push(line.text.slice(0, 1000));
    if (this.stderrTail.length > STDERR_TAIL_LINES) this.stderrTail.shift();
    if (line.text.includes(ROOT_REFUSAL)) this.refused = true;
    return [logEvent('stderr', line.text)];
  }

  finish(exit: { code: number | null; signal: string | null; spawnError?: Error }): HarnessOutcome {
    const sessionId = this.sessionId;
    if (exit.spawnError) {
      return {
        status: 'failed',
        reason: 'harness_start',
        error: `cannot start claude-code: ${exit.spawnError.message}. Install @anthropic-ai/claude-code or give the runner the path of the claude binary (claudePath).`,
      };
    }
    const r = this.result;
    if (r) {
      const text = typeof r.result === 'string' ? r.result : undefined;
      const summary = (text ?? this.lastText)?.slice(0, SUMMARY_LIMIT_CHARS);
      if (r.subtype === 'success' && r.is_error !== true) return { status: 'succeeded', summary, sessionId };
      if (r.subtype === 'error_max_turns') {
        const turns = typeof r.num_turns === 'number' ? ` after ${r.num_turns} turns` : '';
        return { status: 'failed', reason: 'max_turns', error: `claude-code hit its turn limit${turns}`, summary, sessionId };
      }
      if (r.api_error_status === 402) {
        return { status: 'failed', reason: 'budget', error: text ?? 'the model gateway refused the call: budget exhausted', summary, sessionId };
      }
      const errors = Array.isArray(r.errors) ? r.errors.filter((e): e is string => typeof e === 'string') : [];
      const detail = text ?? (errors.length ? errors.join('; ') : `result ${String(r.subtype)}`);
      return { status: 'failed', reason: 'error', error: `claude-code failed: ${detail}`.slice(0, SUMMARY_LIMIT_CHARS), summary, sessionId };
    }
    if (this.refused) {
      return {
        status: 'failed',
        reason: 'harness_start',
        error:
          'claude-code refused --dangerously-skip-permissions as root: run the runner as a non-root user, or in a sandbox with IS_SANDBOX=1 in the harness environment',
        sessionId,
      };
    }
    const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
    const tail = this.stderrTail.slice(-5).join('\n');
    return { status: 'failed', reason: 'error', error: `claude-code ${how} without a result${tail ? `: ${tail}` : ' (no stderr output)'}`, sessionId };
  }

  private onSystem(msg: Json): EventBody[] {
    if (msg.subtype === 'init') {
      if (typeof msg.session_id === 'string') this.sessionId = msg.session_id;
      if (this.started) return [];
      this.started = true;
      return [
        {
          type: 'harness.started',
          data: {
            harness: this.info.harness ?? 'claude-code',
            pid: this.info.pid,
            ...(this.sessionId ? { sessionId: this.sessionId } : {}),
            ...(this.info.workspace ? { workspace: this.info.workspace } : {}),
            ...(this.info.branch ? { branch: this.info.branch } : {}),
          },
        },
      ];
    }
    if (msg.subtype === 'api_retry') {
      const attempt = typeof msg.attempt === 'number' ? ` ${msg.attempt}${typeof msg.max_retries === 'number' ? `/${msg.max_retries}` : ''}` : '';
      const why = msg.error_status ?? msg.error ?? '';
      return [{ type: 'progress', data: { phase: 'harness', message: `model API call failed, retrying${attempt}${why ? ` (${String(why)})` : ''}` } }];
    }
    return [];
  }

  private onAssistant(msg: Json): EventBody[] {
    const m = msg.message;
    if (!isObject(m)) return [];
    const out: EventBody[] = [];
    for (const block of Array.isArray(m.content) ? m.content : []) {
      if (!isObject(block)) continue;
      if (block.type === 'text' && typeof block.text === 'string' && block.text !== '') {
        this.lastText = block.text;
        out.push({ type: 'message', data: { role: 'assistant', text: block.text } });
      } else if (block.type === 'tool_use' && typeof block.id === 'string') {
        const name = typeof block.name === 'string' ? block.name : 'unknown';
        this.toolNames.set(block.id, name);
        out.push({ type: 'tool.call', data: { id: block.id, name, input: block.input ?? {} } });
      }
    }
    const id = typeof m.id === 'string' ? m.id : undefined;
    const model = typeof m.model === 'string' ? m.model : undefined;
    if (isObject(m.usage) && model !== '<synthetic>' && !(id && this.usageSeen.has(id))) {
      if (id) this.usageSeen.add(id);
      const u = m.usage;
      out.push({
        type: 'usage',
        data: {
          inputTokens: count(u.input_tokens),
          outputTokens: count(u.output_tokens),
          cacheReadTokens: count(u.cache_read_input_tokens),
          cacheWriteTokens: count(u.cache_creation_input_tokens),
          ...(model ? { model } : {}),
        },
      });
    }
    return out;
  }

  private onUser(msg: Json): EventBody[] {
    const m = msg.message;
    if (!isObject(m) || !Array.isArray(m.content)) return [];
    const out: EventBody[] = [];
    for (const block of m.content) {
      if (!isObject(block) || block.type !== 'tool_result' || typeof block.tool_use_id !== 'string') continue;
      const { text, truncated } = cutBytes(toolResultText(block.content), TOOL_OUTPUT_LIMIT_BYTES);
      const name = this.toolNames.get(block.tool_use_id);
      out.push({
        type: 'tool.result',
        data: {
          id: block.tool_use_id,
          ...(name ? { name } : {}),
          output: text,
          isError: block.is_error === true,
          ...(truncated ? { truncated: true } : {}),
        },
      });
    }
    return out;
  }
}

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function count(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? Math.floor(v) : 0;
}

function logEvent(stream: 'stdout' | 'stderr', text: string): EventBody {
  return { type: 'log', data: { stream, line: cutLogLine(text, LOG_LINE_LIMIT_CHARS) } };
}

/** A tool_result's content as text: a string, or text blocks joined by newlines. */
function toolResultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return content === undefined || content === null ? '' : JSON.stringify(content);
  return content
    .map((b: unknown) => {
      if (isObject(b) && b.type === 'text' && typeof b.text === 'string') return b.text;
      if (isObject(b) && b.type === 'image') return '[image]';
      return JSON.stringify(b);
    })
    .join('\n');
}

/** Cuts `text` to at most `limit` UTF-8 bytes without splitting a character. */
export function cutBytes(text: string, limit: number): { text: string; truncated: boolean } {
  if (text.length <= limit / 3 || Buffer.byteLength(text) <= limit) return { text, truncated: false };
  let cut = Buffer.from(text, 'utf8').subarray(0, limit).toString('utf8');
  if (cut.endsWith('\uFFFD')) cut = cut.replace(/\uFFFD+$/, '');
  return { text: cut, truncated: true };
}
