import { z } from 'zod';
import { JobStatus, JobResult, TokenUsage } from './job.js';

/**
 * Normalized job events (DESIGN.md "How a job flows", step 4). Every harness's output is
 * parsed into these; they are numbered per job (`seq`, 1, 2, 3, ... with no gaps) when stored
 * and are what clients follow over SSE (`id:` = seq).
 */
export const EventBody = z.discriminatedUnion('type', [
  /** Text from the model (or a system note). */
  z.object({ type: z.literal('message'), data: z.object({ role: z.enum(['assistant', 'user', 'system']), text: z.string() }) }),
  /** The agent invoked a tool. `input` is the tool's arguments as the harness gave them. */
  z.object({ type: z.literal('tool.call'), data: z.object({ id: z.string(), name: z.string(), input: z.unknown() }) }),
  /** A tool's output. `output` is text, possibly truncated by the harness parser (see `truncated`). */
  z.object({
    type: z.literal('tool.result'),
    data: z.object({ id: z.string(), name: z.string().optional(), output: z.string(), isError: z.boolean(), truncated: z.boolean().optional() }),
  }),
  /** Usage the harness reported for one turn (informational; the gateway's ledger is authoritative). */
  z.object({ type: z.literal('usage'), data: TokenUsage.extend({ model: z.string().optional() }) }),
  /** A line of harness output that is not a protocol event. */
  z.object({ type: z.literal('log'), data: z.object({ stream: z.enum(['stdout', 'stderr']), line: z.string() }) }),
  /** What the runner is doing before/after the harness (`workspace`, `harness`, `cleanup`): shown to waiting users. */
  z.object({ type: z.literal('progress'), data: z.object({ phase: z.string(), message: z.string() }) }),
  /** The harness process started: its pid (= its process group id) and, when known, its session id. */
  z.object({
    type: z.literal('harness.started'),
    data: z.object({ harness: z.string(), pid: z.number().int(), sessionId: z.string().optional(), workspace: z.string().optional(), branch: z.string().optional() }),
  }),
  /**
   * Server-side status changes (queued, assigned to runner X, cancelled, lost). `runnerId`: the
   * runner the change concerns. `lostAttempt`: on the `queued` of a lost job's retry, the
   * attempt that was lost on that runner (it went silent, was revoked, or stopped reporting
   * the job) — a runner's recent jobs show that attempt as `lost`.
   */
  z.object({
    type: z.literal('status'),
    data: z.object({ status: JobStatus, message: z.string().optional(), runnerId: z.number().int().optional(), lostAttempt: z.number().int().positive().optional() }),
  }),
  /** A child job joined the tree. `label`: a short name of its work (its input's `name`, or the last part of its `repo`), when it has one. */
  z.object({ type: z.literal('child.started'), data: z.object({ jobId: z.number().int(), agent: z.string(), label: z.string().optional() }) }),
  /**
   * An attempt of a job paused for budget ended (issue 3), the job did not: its runner's
   * `job.finished` for that attempt, stored under this type by the server (server/paused-attempt-end.ts),
   * so a job has one `job.finished`, its last word. `status`: how the attempt ended (`cancelled`:
   * the runner stopped it for the pause; `failed`: the harness exited on the budget refusal);
   * `reason`, `error` and `sessionId` as the runner reported them. A `status` event follows
   * (still paused, or resuming). Runners may not send it.
   */
  z.object({
    type: z.literal('attempt.ended'),
    data: z.object({
      attempt: z.number().int().positive(),
      status: z.enum(['failed', 'cancelled']),
      reason: z.string().optional(),
      error: z.string().optional(),
      sessionId: z.string().optional(),
    }),
  }),
  /** The runner's final word on the job: its one `job.finished`, the last event of its stream (a paused attempt's end is `attempt.ended`). */
  z.object({
    type: z.literal('job.finished'),
    data: z.object({
      status: z.enum(['succeeded', 'failed', 'cancelled']),
      reason: z.string().optional(),
      error: z.string().optional(),
      sessionId: z.string().optional(),
      result: JobResult.optional(),
    }),
  }),
]);
export type EventBody = z.infer<typeof EventBody>;
export type EventType = EventBody['type'];

/**
 * The largest `data` one job event keeps, as JSON text in UTF-8 bytes: 256 KiB. The runner cuts
 * its events to this before upload and the server again before storing (an event from any
 * runner), with core/event-cap.ts: the event keeps its type and every field, and the longest
 * strings in it are cut, each ending in a marker `… [truncated 14.1 MiB]` (the size of what
 * was cut); a cut `tool.result` output also gets `truncated: true`. Why 256 KiB: 4× the
 * harness parsers' 64 KiB cut of a tool's output, above the longest message a model writes in
 * one turn at common output limits (32k tokens ≈ 128 KB), a quarter of the runner's 1 MiB
 * upload batch (so a cut event never needs a frame of its own), and small enough that a page
 * of events and the dashboard's transcript stay responsive (a runner frame may be 16 MiB: one
 * 15 MB log line used to be stored and served whole).
 */
export const MAX_EVENT_DATA_BYTES = 256 * 1024;

/** A stored job event. `at` is ISO-8601 (when the runner or server produced it). */
export type JobEvent = EventBody & { seq: number; jobId: number; at: string };
export const JobEvent: z.ZodType<JobEvent> = z
  .object({ seq: z.number().int().positive(), jobId: z.number().int().positive(), at: z.string() })
  .and(EventBody) as unknown as z.ZodType<JobEvent>;
