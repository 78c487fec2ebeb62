import { MAX_ID, type RunnerToServer } from '../protocol/index.js';

// A hand-written check of the runner frames that make up nearly all of a busy hub's traffic
// (`job.events` with the common event kinds, `heartbeat`), tried before zod: zod's
// discriminated union of intersections (UploadedEvent = object & EventBody) was ~15% of the
// server thread's CPU per job in bench/dispatch (--cpu-prof: mergeValues,
// handleIntersectionResults). It accepts only what RunnerToServer accepts, and builds the
// same output zod would (fresh objects, keys in schema order, nothing else); anything it is
// not sure of — another frame type or event kind, an unknown key, a wrong type, a `result` —
// gives null and goes to zod, which also writes every error message (frame-fast.test.ts checks
// both against zod).

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
/** protocol `Id` (ids.ts): an integer 1..MAX_ID (jobId, attempt, rseq are PostgreSQL `integer`). */
const isPosInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v > 0 && v <= MAX_ID;
const isStr = (v: unknown): v is string => typeof v === 'string';

/** True when every own key of `o` is in `allowed` (zod would strip any other: leave those to zod). */
function onlyKeys(o: Obj, allowed: readonly string[]): boolean {
  // JSON.parse makes only own enumerable keys ("__proto__" too), all of which for-in visits.
  for (const k in o) if (!allowed.includes(k)) return false;
  return true;
}

/** Copies the optional string keys `keys` of `src` present into `out` (in `keys` order); false when one is not a string. */
function optStrings(src: Obj, out: Obj, keys: readonly string[]): boolean {
  for (const k of keys) {
    if (!Object.hasOwn(src, k)) continue;
    const v = src[k];
    if (!isStr(v)) return false;
    out[k] = v;
  }
  return true;
}

const EVENT_KEYS = ['rseq', 'at', 'type', 'data'] as const;
const MESSAGE_ROLES = ['assistant', 'user', 'system'];
const STREAMS = ['stdout', 'stderr'];
const FINISHED = ['succeeded', 'failed', 'cancelled'];

/** An uploaded event's `data` for the kinds checked here (as EventBody's schema for `type` outputs it), or null. */
function eventData(type: unknown, d: unknown): Obj | null {
  if (!isObj(d)) return null;
  switch (type) {
    case 'harness.started': {
      if (!onlyKeys(d, ['harness', 'pid', 'sessionId', 'workspace', 'branch'])) return null;
      if (!isStr(d.harness) || typeof d.pid !== 'number' || !Number.isSafeInteger(d.pid)) return null;
      const out: Obj = { harness: d.harness, pid: d.pid };
      return optStrings(d, out, ['sessionId', 'workspace', 'branch']) ? out : null;
    }
    case 'job.finished': {
      // `result` (a JobResult) is zod's.
      if (!onlyKeys(d, ['status', 'reason', 'error', 'sessionId'])) return null;
      if (!FINISHED.includes(d.status as string)) return null;
      const out: Obj = { status: d.status };
      return optStrings(d, out, ['reason', 'error', 'sessionId']) ? out : null;
    }
    case 'message':
      if (!onlyKeys(d, ['role', 'text']) || !MESSAGE_ROLES.includes(d.role as string) || !isStr(d.text)) return null;
      return { role: d.role, text: d.text };
    case 'log':
      if (!onlyKeys(d, ['stream', 'line']) || !STREAMS.includes(d.stream as string) || !isStr(d.line)) return null;
      return { stream: d.stream, line: d.line };
    case 'progress':
      if (!onlyKeys(d, ['phase', 'message']) || !isStr(d.phase) || !isStr(d.message)) return null;
      return { phase: d.phase, message: d.message };
    case 'tool.result': {
      if (!onlyKeys(d, ['id', 'name', 'output', 'isError', 'truncated'])) return null;
      if (!isStr(d.id) || !isStr(d.output) || typeof d.isError !== 'boolean') return null;
      if (Object.hasOwn(d, 'name') && !isStr(d.name)) return null;
      if (Object.hasOwn(d, 'truncated') && typeof d.truncated !== 'boolean') return null;
      const out: Obj = { id: d.id };
      if (Object.hasOwn(d, 'name')) out.name = d.name;
      out.output = d.output;
      out.isError = d.isError;
      if (Object.hasOwn(d, 'truncated')) out.truncated = d.truncated;
      return out;
    }
    default:
      return null;
  }
}

/** A `{ jobId, attempt }` list as RunningJobReport[] outputs it, or null. */
function running(v: unknown): Obj[] | null {
  if (!Array.isArray(v)) return null;
  const out: Obj[] = [];
  for (const r of v) {
    if (!isObj(r) || !onlyKeys(r, ['jobId', 'attempt']) || !isPosInt(r.jobId) || !isPosInt(r.attempt)) return null;
    out.push({ jobId: r.jobId, attempt: r.attempt });
  }
  return out;
}

/**
 * `raw` (a JSON.parse result) as `RunnerToServer.parse(raw)` would give it, for the frames this
 * check knows (`job.events` whose events are `harness.started`, `job.finished` without a
 * `result`, `message`, `log`, `progress` or `tool.result`; `heartbeat`); null for any other
 * input, valid or not: parse it with zod then (for its output, or its error message).
 */
export function fastRunnerFrame(raw: unknown): RunnerToServer | null {
  if (!isObj(raw)) return null;
  if (raw.type === 'job.events') {
    if (!onlyKeys(raw, ['type', 'jobId', 'attempt', 'events'])) return null;
    const { jobId, attempt, events } = raw;
    if (!isPosInt(jobId) || !isPosInt(attempt) || !Array.isArray(events) || events.length < 1 || events.length > 1000) return null;
    const out: Obj[] = new Array<Obj>(events.length);
    for (let i = 0; i < events.length; i++) {
      const e: unknown = events[i];
      if (!isObj(e) || !onlyKeys(e, EVENT_KEYS) || !isPosInt(e.rseq) || !isStr(e.at)) return null;
      const data = eventData(e.type, e.data);
      if (!data) return null;
      out[i] = { rseq: e.rseq, at: e.at, type: e.type, data };
    }
    return { type: 'job.events', jobId, attempt, events: out } as unknown as RunnerToServer;
  }
  if (raw.type === 'heartbeat') {
    if (!onlyKeys(raw, ['type', 'running'])) return null;
    const r = running(raw.running);
    return r ? ({ type: 'heartbeat', running: r } as unknown as RunnerToServer) : null;
  }
  return null;
}
