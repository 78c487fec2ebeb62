import type { Job, JobEvent } from '../protocol/index.js';
import { formatMicros } from '../core/money.js';
import { oneLine } from '../protocol/index.js';

/** Longest tool-input JSON shown on a `→` line, in characters (the `, ...}` marker included). */
export const MAX_INPUT_CHARS = 80;
/** Longest tool-result summary shown on a `←` line, in characters. */
export const MAX_SUMMARY_CHARS = 80;

/** Cuts `text` to at most `max` characters, ending with `...` when cut. */
export function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  return text.slice(0, Math.max(0, max - 3)) + '...';
}

/**
 * A tool's input as compact JSON of at most `max` characters (default 80). For an object,
 * whole `"key":value` entries are kept in order while they fit and the rest are replaced by
 * `, ...}`: `{"file_path":"src/calc.js", ...}`. When even the first entry does not fit it is cut
 * and ends `...}`. Other values are cut with `...`.
 */
export function formatToolInput(input: unknown, max = MAX_INPUT_CHARS): string {
  const full = JSON.stringify(input) ?? 'null';
  if (full.length <= max) return full;
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return cut(full, max);
  const entries = Object.entries(input as Record<string, unknown>).map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v) ?? 'null'}`);
  const more = ', ...}';
  let out = '{';
  let kept = 0;
  for (const e of entries) {
    const next = out + (kept > 0 ? ',' : '') + e;
    if (next.length + more.length > max) break;
    out = next;
    kept++;
  }
  if (kept === 0) return cut('{' + (entries[0] ?? ''), max - 1) + '}';
  return out + more;
}

/** Test-runner tallies found in a tool's output. */
export interface TestTally {
  passed: number;
  failed: number;
}

/**
 * Finds the LAST test-runner summary in `output`: node:test TAP (`# pass 3` / `# fail 1`),
 * node:test spec (`ℹ pass 3` / `ℹ fail 1`), jest (`Tests: 1 failed, 3 passed, 4 total`),
 * vitest (`Tests  1 failed | 3 passed (4)`), pytest (`1 failed, 3 passed in 0.12s`), mocha
 * (`3 passing` / `1 failing`). Null when there is none.
 */
export function testTally(output: string): TestTally | null {
  const lines = output.split(/\r?\n/);
  let found: TestTally | null = null;
  // node:test (TAP "#" or spec "ℹ"): pass and fail come on separate lines.
  let pass: number | null = null;
  for (const raw of lines) {
    const line = stripAnsi(raw).trim();
    let m = /^(?:#|ℹ)\s*pass\s+(\d+)$/.exec(line);
    if (m) {
      pass = Number(m[1]);
      continue;
    }
    m = /^(?:#|ℹ)\s*fail\s+(\d+)$/.exec(line);
    if (m && pass !== null) {
      found = { passed: pass, failed: Number(m[1]) };
      pass = null;
      continue;
    }
    // jest: "Tests:       1 failed, 3 passed, 4 total"
    m = /^Tests:\s+(.*\btotal)$/.exec(line);
    if (m) {
      found = { passed: countOf(m[1] ?? '', 'passed'), failed: countOf(m[1] ?? '', 'failed') };
      continue;
    }
    // vitest: "Tests  1 failed | 3 passed (4)"
    m = /^Tests\s+(.*\bpassed.*|.*\bfailed.*)\(\d+\)$/.exec(line);
    if (m) {
      found = { passed: countOf(m[1] ?? '', 'passed'), failed: countOf(m[1] ?? '', 'failed') };
      continue;
    }
    // pytest: "==== 1 failed, 3 passed in 0.12s ====" (or without the rules)
    m = /^=*\s*((?:\d+ \w+(?:, )?)+) in [\d.]+s\b.*$/.exec(line);
    if (m && /\b(passed|failed)\b/.test(m[1] ?? '')) {
      found = { passed: countOf(m[1] ?? '', 'passed'), failed: countOf(m[1] ?? '', 'failed') };
      continue;
    }
    // mocha: "3 passing (12ms)" then "1 failing"
    m = /^(\d+) passing\b/.exec(line);
    if (m) {
      found = { passed: Number(m[1]), failed: 0 };
      continue;
    }
    m = /^(\d+) failing$/.exec(line);
    if (m && found) found = { passed: found.passed, failed: Number(m[1]) };
  }
  return found;
}

function countOf(text: string, word: string): number {
  const m = new RegExp(`(\\d+) ${word}\\b`).exec(text);
  return m ? Number(m[1]) : 0;
}

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;?]*[A-Za-z]/g;
function stripAnsi(s: string): string {
  return s.replace(ANSI, '');
}

/**
 * One-line summary of a tool's output: test tallies when the output has them
 * (`3 passed, 1 failed`), else the first non-empty line cut to 80 characters, prefixed with
 * `(error) ` when the tool reported an error (not with tallies: a test run with failures
 * exits non-zero, and the tally already says so). Runs of whitespace (tabs) become one space.
 * Empty output → `(no output)`.
 */
export function summarizeToolOutput(output: string, isError: boolean): string {
  const tally = testTally(output);
  if (tally) return `${tally.passed} passed, ${tally.failed} failed`;
  const first = output
    .split(/\r?\n/)
    .map((l) => stripAnsi(l).replace(/\s+/g, ' ').trim())
    .find((l) => l !== '');
  const text = cut(first ?? '(no output)', MAX_SUMMARY_CHARS);
  return isError ? `(error) ${text}` : text;
}

/**
 * What a waiting user is told for a `status` or `progress` event (the text after `…`), or
 * null for other events. `status` queued → its message or `waiting for a runner`; assigned →
 * `assigned to runner N`; `progress` → its message (e.g. `preparing workspace: cloning ...`).
 */
export function waitText(ev: JobEvent): string | null {
  if (ev.type === 'progress') return ev.data.message || ev.data.phase;
  if (ev.type !== 'status') return null;
  if (ev.data.message) return ev.data.message;
  switch (ev.data.status) {
    case 'queued':
      return 'waiting for a runner';
    case 'assigned':
      return ev.data.runnerId !== undefined ? `assigned to runner ${ev.data.runnerId}` : 'assigned to a runner';
    case 'running':
      return 'running';
    case 'paused':
      return 'paused: the job tree is out of budget';
    case 'cancelling':
      return 'cancelling: stopping its processes';
    default:
      return ev.data.status;
  }
}

/**
 * Turns a job's events into the lines `flotilla run` prints, keeping the state it needs
 * (tool names by call id, the last assistant message):
 * - `tool.call` → `test-fixer → Bash {"command":"npm test"}`
 * - `tool.result` → `test-fixer ← Bash 3 passed, 1 failed`
 * - `status` / `progress` → `test-fixer … waiting for a runner`
 * - `child.started` → `test-fixer … started child job 8 (pr-reviewer)`
 * - assistant `message` → nothing at once; {@link EventFormatter.finalLine} gives
 *   `test-fixer: <text>` for the last one.
 */
export class EventFormatter {
  private readonly toolNames = new Map<string, string>();
  private lastText: string | null = null;
  private summary: string | null = null;

  constructor(readonly agent: string) {}

  /** The line for `ev`, or null when it prints nothing by itself. */
  line(ev: JobEvent): string | null {
    switch (ev.type) {
      case 'tool.call':
        this.toolNames.set(ev.data.id, ev.data.name);
        return `${this.agent} → ${ev.data.name} ${formatToolInput(ev.data.input)}`;
      case 'tool.result': {
        const name = ev.data.name ?? this.toolNames.get(ev.data.id) ?? 'tool';
        return `${this.agent} ← ${name} ${summarizeToolOutput(ev.data.output, ev.data.isError)}`;
      }
      case 'message':
        if (ev.data.role === 'assistant' && ev.data.text.trim() !== '') this.lastText = ev.data.text.trim();
        return null;
      case 'status':
      case 'progress':
        return `${this.agent} … ${waitText(ev)}`;
      case 'child.started':
        // issue 6: `migrator ⇢ repo-upgrader (job 77/repo-upgrader-api)`
        return `${this.agent} ⇢ ${ev.data.agent} (job ${ev.data.jobId}${ev.data.label ? `/${ev.data.label}` : ''})`;
      case 'job.finished':
        if (ev.data.result?.summary) this.summary = ev.data.result.summary.trim();
        return null;
      default:
        return null;
    }
  }

  /** `test-fixer: <last assistant message>` (or the result summary), or null when there was none. */
  finalLine(): string | null {
    const text = this.lastText ?? this.summary;
    return text ? `${this.agent}: ${text}` : null;
  }
}

/**
 * Left-aligned text table: a header row and rows, columns separated by two spaces, no trailing
 * spaces. Cells are shown on one line (protocol/text.ts oneLine: control characters, U+2028 and
 * U+2029 become spaces), so stored text cannot break a row or send the terminal escapes.
 */
export function formatTable(headers: string[], cells: string[][]): string {
  const rows = cells.map((r) => r.map(oneLine));
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const fmt = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [fmt(headers), ...rows.map(fmt)].join('\n');
}

/** Headers of the end-of-run cost table. */
export const COST_HEADERS = ['job', 'agent', 'status', 'model calls', 'input', 'output', 'cache read', 'cache write', 'cost'];

/**
 * The end-of-run table for a job (usage from `GET /api/jobs/:id`): job, agent, status, model
 * calls, input / output / cache read / cache write tokens, cost in $ with 6 decimals
 * (`$0.054399`). Unknown usage shows `-`. When the job did not succeed, adds `reason: ...`
 * and `error: ...` lines.
 */
export function formatJobSummary(job: Job): string {
  const u = job.usage;
  const n = (v: number | undefined) => (v === undefined ? '-' : String(v));
  let cost = u ? formatMicros(u.costMicros) : '-';
  if (u && u.estimatedCalls > 0) cost += ` (${u.estimatedCalls} estimated)`;
  const row = [String(job.id), job.agent, job.status, n(u?.modelCalls), n(u?.inputTokens), n(u?.outputTokens), n(u?.cacheReadTokens), n(u?.cacheWriteTokens), cost];
  const lines = [formatTable(COST_HEADERS, [row])];
  if (job.status !== 'succeeded') {
    if (job.endReason) lines.push(`reason: ${job.endReason}`);
    if (job.error) lines.push(`error: ${job.error}`);
  }
  return lines.join('\n');
}

/** Seconds between two epoch-ms instants, whole and rounded down (`12s`). */
export function elapsed(fromMs: number, toMs: number): string {
  return `${Math.max(0, Math.floor((toMs - fromMs) / 1000))}s`;
}
