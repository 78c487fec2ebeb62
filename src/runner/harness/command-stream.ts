import { EventBody } from '../../protocol/index.js';
import { cutLogLine, truncatedLineText, type Line } from '../lines.js';
import { cutBytes, LOG_LINE_LIMIT_CHARS, TOOL_OUTPUT_LIMIT_BYTES } from './claude-stream.js';
import type { HarnessOutcome, HarnessParser } from './types.js';

const SUMMARY_LIMIT_CHARS = 20_000;
const STDERR_TAIL_LINES = 20;
/** Event types a command may write; the rest (`harness.started`, `job.finished`, `status`, ...) are Flotilla's own. */
const COMMAND_EVENT_TYPES = new Set(['message', 'tool.call', 'tool.result', 'usage', 'progress', 'log']);

type Json = Record<string, unknown>;

/** What the parser reports in `harness.started`. */
export interface CommandStreamInfo {
  pid: number;
  workspace?: string;
  branch?: string;
  /** The command line, for error messages. */
  command: string;
}

/**
 * Parses a `command` harness's output (the line format of docs/command-harness.md):
 * - a stdout line that is a JSON object whose `type` is `message`, `tool.call`, `tool.result`,
 *   `usage`, `progress` or `log`, with `data` as in the job event protocol
 *   (protocol/events.ts) → that event (tool output cut to 64 KiB with `truncated: true`);
 * - `{"type":"session","data":{"id":"..."}}` → the job's session id (for `--resume`);
 * - `{"type":"result","data":{"summary":"..."}}` → the job result's summary (default: the
 *   last assistant message);
 * - a line that starts with `{` but is not valid JSON, or has an event `type` with bad
 *   `data`, or a type Flotilla reserves → ONE `log` event `[malformed event line: <why>] <line>`;
 * - every other line (plain text, JSON that is not an object with a string `type`, lines cut
 *   at the line limit, invalid UTF-8) → a `log` event; stderr lines → `log` events (the last
 *   20 kept for the failure message).
 * Outcome: exit code 0 → succeeded; any other code or a signal → failed `error` with the
 * stderr tail; the command could not be started → failed `harness_start`.
 */
export class CommandEventParser implements HarnessParser {
  private sessionId: string | undefined;
  private summary: string | undefined;
  private lastText: string | undefined;
  private readonly stderrTail: string[] = [];
  readonly fatal = false;

  constructor(private readonly info: CommandStreamInfo) {}

  begin(): EventBody[] {
    return [
      {
        type: 'harness.started',
        data: {
          harness: 'command',
          pid: this.info.pid,
          ...(this.info.workspace ? { workspace: this.info.workspace } : {}),
          ...(this.info.branch ? { branch: this.info.branch } : {}),
        },
      },
    ];
  }

  stdout(line: Line): EventBody[] {
    if (line.truncated) {
      return [logEvent('stdout', truncatedLineText(line, LOG_LINE_LIMIT_CHARS))];
    }
    const text = line.text.trim();
    if (text === '') return [];
    if (!text.startsWith('{')) return [logEvent('stdout', line.invalidUtf8 ? `[invalid UTF-8] ${line.text}` : line.text)];
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch (err) {
      return [malformed((err as Error).message, line.text)];
    }
    if (!isObject(msg) || typeof msg.type !== 'string') return [logEvent('stdout', line.text)];
    const data = msg.data;
    if (msg.type === 'session') {
      if (!isObject(data) || typeof data.id !== 'string' || data.id === '' || data.id.length > 200) return [malformed('field data.id: a session line needs a non-empty string id (at most 200 characters)', line.text)];
      this.sessionId = data.id;
      return [];
    }
    if (msg.type === 'result') {
      if (!isObject(data) || (data.summary !== undefined && typeof data.summary !== 'string')) return [malformed('field data.summary: must be a string', line.text)];
      if (typeof data.summary === 'string') this.summary = data.summary.slice(0, SUMMARY_LIMIT_CHARS);
      return [];
    }
    if (!COMMAND_EVENT_TYPES.has(msg.type)) return [malformed(`field type: ${JSON.stringify(msg.type)} is not an event a command may write`, line.text)];
    const parsed = EventBody.safeParse({ type: msg.type, data });
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return [malformed(`field ${['data', ...(issue?.path ?? []).slice(1)].join('.')}: ${issue?.message ?? 'invalid'}`, line.text)];
    }
    const ev = parsed.data;
    if (ev.type === 'message' && ev.data.role === 'assistant') this.lastText = ev.data.text;
    if (ev.type === 'tool.result') {
      const { text: out, truncated } = cutBytes(ev.data.output, TOOL_OUTPUT_LIMIT_BYTES);
      if (truncated) return [{ type: 'tool.result', data: { ...ev.data, output: out, truncated: true } }];
    }
    if (ev.type === 'log' && ev.data.line.length > LOG_LINE_LIMIT_CHARS) return [logEvent(ev.data.stream, ev.data.line)];
    return [ev];
  }

  stderr(line: Line): EventBody[] {
    if (line.text.trim() === '') return [];
    this.stderrTail.push(line.text.slice(0, 1000));
    if (this.stderrTail.length > STDERR_TAIL_LINES) this.stderrTail.shift();
    return [logEvent('stderr', line.text)];
  }

  finish(exit: { code: number | null; signal: string | null; spawnError?: Error }): HarnessOutcome {
    const sessionId = this.sessionId;
    if (exit.spawnError) {
      return { status: 'failed', reason: 'harness_start', error: `cannot start command ${this.info.command}: ${exit.spawnError.message}. Check agent.yaml "command" (an executable on the runner's PATH or a path in the workspace).` };
    }
    const summary = (this.summary ?? this.lastText)?.slice(0, SUMMARY_LIMIT_CHARS);
    if (exit.code === 0) return { status: 'succeeded', summary, sessionId };
    const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
    const tail = this.stderrTail.slice(-5).join('\n');
    return { status: 'failed', reason: 'error', error: `command ${how}${tail ? `: ${tail}` : ' (no stderr output)'}`, summary, sessionId };
  }
}

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function logEvent(stream: 'stdout' | 'stderr', text: string): EventBody {
  return { type: 'log', data: { stream, line: cutLogLine(text, LOG_LINE_LIMIT_CHARS) } };
}

function malformed(why: string, line: string): EventBody {
  return logEvent('stdout', `[malformed event line: ${why}] ${line}`);
}
