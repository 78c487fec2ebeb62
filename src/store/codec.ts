import type { Selectable } from 'kysely';
import type { EventBody, JobEvent, JobResult, JobStatus, Labels } from '../protocol/index.js';
import type { ApiTokensTable, JobEventsTable, JobsTable, RunnersTable, SqlDialect } from './schema.js';
import type { ApiTokenRow, JobRow, RunnerRow } from './types.js';

/**
 * The one place where driver values become the Store's JS types (and back):
 * - int8 columns: `pg` returns strings, better-sqlite3 numbers → `number` (safe up to 2^53;
 *   epoch ms and micro-dollar sums stay far below);
 * - JSON columns: written as JSON text on both engines; read back as text (SQLite) or an
 *   already-parsed value (PostgreSQL jsonb) → parsed value;
 * - flags: integer 0/1 → boolean;
 * - strings inside JSON: NUL and lone surrogates become U+FFFD ({@link storable}).
 */
export interface Codec {
  readonly dialect: SqlDialect;
  /** JSON value → the parameter to bind (JSON text on both engines). */
  json(value: unknown): string;
  /** JSON column value as the driver returned it → parsed value. */
  parse(value: unknown): unknown;
}

// eslint-disable-next-line no-control-regex -- NUL is exactly what we look for
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * Replaces what PostgreSQL cannot store in text/jsonb — NUL characters and lone UTF-16
 * surrogates (e.g. a tool output cut in the middle of an emoji) — with U+FFFD, on both
 * engines so they behave the same. Everything else is unchanged.
 */
export function storable(text: string): string {
  return text.replace(UNSTORABLE, '\uFFFD');
}

/** The escapes JSON.stringify writes for a NUL (`\u0000`) and a lone surrogate (`\udXXX`); a `\\u...` in the text also matches (harmless: the slow path then runs). */
const UNSTORABLE_ESCAPE = /\\u0000|\\ud[89a-f]/i;

/**
 * `JSON.stringify(v)` with every string value made {@link storable}. A replacer function made
 * every stringify several times slower (bench/dispatch, --cpu-prof); text without the escapes
 * of a NUL or a lone surrogate has no string to change, so it is the answer as is.
 */
function storableJson(v: unknown): string {
  const plain = JSON.stringify(v);
  if (plain === undefined || !UNSTORABLE_ESCAPE.test(plain)) return plain;
  return JSON.stringify(v, (_k, x: unknown) => (typeof x === 'string' ? storable(x) : x));
}

/** The codec for one engine. */
export function codecFor(dialect: SqlDialect): Codec {
  return {
    dialect,
    json: storableJson,
    parse:
      dialect === 'sqlite'
        ? (v) => (typeof v === 'string' ? JSON.parse(v) : v)
        : (v) => v,
  };
}

/** int8/numeric (string or number) → number. @throws Error when the value is not a finite number. */
export function num(v: unknown): number {
  const n = typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : Number(String(v));
  if (!Number.isFinite(n)) throw new Error(`store: expected a number, got ${JSON.stringify(String(v))}`);
  return n;
}

/** Like {@link num}, but null/undefined stay null. */
export function numOrNull(v: unknown): number | null {
  return v === null || v === undefined ? null : num(v);
}

/** Integer 0/1 (or boolean) → boolean. */
export function flag(v: unknown): boolean {
  return v === true || v === 1 || v === '1';
}

export function toApiTokenRow(r: Selectable<ApiTokensTable>): ApiTokenRow {
  return { id: num(r.id), name: r.name, role: r.role as ApiTokenRow['role'], createdAt: num(r.created_at) };
}

export function toRunnerRow(c: Codec, r: Selectable<RunnersTable>): RunnerRow {
  return {
    id: num(r.id),
    name: r.name,
    labels: c.parse(r.labels) as Labels,
    version: r.version,
    connected: flag(r.connected),
    offline: flag(r.offline),
    lastHeartbeatAt: numOrNull(r.last_heartbeat_at),
    createdAt: num(r.created_at),
    hold:
      r.hold_until === null || r.hold_until === undefined
        ? null
        : { until: num(r.hold_until), reason: r.hold_reason ?? '', kind: r.hold_kind === 'provisioning' ? 'provisioning' : 'manual' },
    revokedAt: numOrNull(r.revoked_at),
    ...runnerLimits(c, r),
  };
}

/** 0009 columns: bound labels, and capacity / browser slots as in effect (owner setting, else the runner's offer; browser ≤ capacity). */
function runnerLimits(c: Codec, r: Selectable<RunnersTable>): Pick<RunnerRow, 'capacity' | 'browserSlots' | 'boundLabels' | 'ownerCapacity' | 'ownerBrowserSlots'> {
  const ownerCapacity = numOrNull(r.owner_capacity);
  const ownerBrowserSlots = numOrNull(r.owner_browser_slots);
  const capacity = ownerCapacity ?? num(r.capacity);
  const browserSlots = Math.min(ownerBrowserSlots ?? num(r.browser_slots ?? 1), capacity);
  const bound = r.bound_labels === undefined || r.bound_labels === null ? {} : (c.parse(r.bound_labels) as Labels);
  return { capacity, browserSlots, boundLabels: bound, ownerCapacity, ownerBrowserSlots };
}

/**
 * A `jobs` row → {@link JobRow}: ids and µ$/epoch-ms figures as numbers (PostgreSQL's bigint
 * strings parsed), JSON columns parsed with `c`. Columns of later migrations that a statement did
 * not select (retries_left, pinned_runner_id, workspace_job_id, effort_tier, paused_need_micros)
 * are left out of the row rather than read as null.
 * @throws Error when a numeric column holds no finite number.
 */
export function toJobRow(c: Codec, r: Selectable<JobsTable>): JobRow {
  return {
    id: num(r.id),
    parentId: numOrNull(r.parent_id),
    rootId: num(r.root_id),
    agent: r.agent,
    agentVersion: r.agent_version,
    input: c.parse(r.input) as Record<string, unknown>,
    status: r.status as JobStatus,
    endReason: r.end_reason,
    error: r.error,
    priority: num(r.priority),
    selector: c.parse(r.selector) as Labels,
    runnerId: numOrNull(r.runner_id),
    attempt: num(r.attempt),
    budgetMicros: num(r.budget_micros),
    sessionId: r.session_id,
    resumeSessionId: r.resume_session_id,
    result: r.result === null ? null : (c.parse(r.result) as JobResult),
    createdAt: num(r.created_at),
    assignedAt: numOrNull(r.assigned_at),
    startedAt: numOrNull(r.started_at),
    finishedAt: numOrNull(r.finished_at),
    ...(r.retries_left !== undefined ? { retriesLeft: num(r.retries_left) } : {}),
    ...(r.pinned_runner_id !== undefined ? { pinnedRunnerId: numOrNull(r.pinned_runner_id) } : {}),
    ...(r.workspace_job_id !== undefined ? { workspaceJobId: numOrNull(r.workspace_job_id) } : {}),
    ...(r.effort_tier !== undefined ? { effortTier: r.effort_tier } : {}),
    ...(r.paused_need_micros !== undefined ? { pausedNeedMicros: numOrNull(r.paused_need_micros) } : {}),
    ...(r.resumed_at !== undefined ? { resumedAt: numOrNull(r.resumed_at) } : {}),
  };
}

export function toJobEvent(c: Codec, r: Pick<Selectable<JobEventsTable>, 'job_id' | 'seq' | 'type' | 'data' | 'at'>): JobEvent {
  return { seq: num(r.seq), jobId: num(r.job_id), at: r.at, type: r.type, data: c.parse(r.data) } as JobEvent & EventBody;
}
