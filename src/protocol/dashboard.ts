import { z } from 'zod';
import { JobEvent } from './events.js';
import { Task } from './task.js';

/**
 * Issue 8's dashboard views that read history: a task's conversation, a runner's activity,
 * a job's events read from the end, and the account's default effort tier. Times are ISO-8601.
 */

/**
 * What woke a task in one turn: a prompt a person queued (`source: prompt`, `kind: prompt`,
 * its text) or an event a receiver or the API recorded (`source: event`, e.g. `kind:
 * issue_comment.created`, the text the agent is shown).
 */
export const ConversationInput = z.object({
  source: z.enum(['prompt', 'event']),
  /** The prompt's or the event's id (ids of the two kinds are separate). */
  id: z.number().int().positive(),
  kind: z.string(),
  actor: z.string().nullable(),
  receiver: z.string().nullable(),
  text: z.string(),
  at: z.string(),
});
export type ConversationInput = z.infer<typeof ConversationInput>;

/** One `message` event of the turn's job: what the agent (or harness) said, in seq order. */
export const ConversationReply = z.object({ seq: z.number().int().positive(), role: z.enum(['assistant', 'user', 'system']), text: z.string(), at: z.string() });
export type ConversationReply = z.infer<typeof ConversationReply>;

/** One turn: what woke it, the job that ran it (null when not recorded), and that job's messages. */
export const ConversationTurn = z.object({
  turn: z.number().int().positive(),
  jobId: z.number().int().positive().nullable(),
  /** The job's status now (`running`, `succeeded`, ...), or null without a job. */
  jobStatus: z.string().nullable(),
  startedAt: z.string().nullable(),
  inputs: z.array(ConversationInput),
  replies: z.array(ConversationReply),
  /** True when the job said more than the replies shown (at most 200 per turn). */
  repliesTruncated: z.boolean(),
});
export type ConversationTurn = z.infer<typeof ConversationTurn>;

/**
 * `GET /api/tasks/:id/conversation` response: the task, its turns oldest first (the newest
 * `limit` before the `before` cursor), what waits for its next turn, and the cursor of the
 * older turns (`olderBefore`: pass it as `before`; null when there are none).
 */
export const TaskConversation = z.object({
  task: Task,
  turns: z.array(ConversationTurn),
  queued: z.array(ConversationInput),
  olderBefore: z.number().int().positive().nullable(),
});
export type TaskConversation = z.infer<typeof TaskConversation>;

/**
 * One line of a runner's activity: `registered`; status and hold changes recorded as they
 * happen (`connected`, `disconnected`, `offline`, `held`, `extended`, `resumed`, `capacity`,
 * `revoked`); a job started on it (`job.started`), or given to it and not started yet
 * (`job.assigned`), and ended (`job.ended`, text with its status and reason).
 */
export const RunnerActivityEntry = z.object({
  at: z.string(),
  kind: z.string(),
  text: z.string(),
  jobId: z.number().int().positive().nullable(),
});
export type RunnerActivityEntry = z.infer<typeof RunnerActivityEntry>;

/** `GET /api/runners/:id/activity` response: newest first. */
export const RunnerActivity = z.object({ entries: z.array(RunnerActivityEntry) });
export type RunnerActivity = z.infer<typeof RunnerActivity>;

/**
 * `GET /api/jobs/:id/events/page` response: a page of the job's events, ascending, ending
 * before the `before` seq (or the newest). Seqs run 1..n without gaps, so `events[0].seq - 1`
 * older events remain (0: this page reaches the start).
 */
export const JobEventPage = z.object({ events: z.array(JobEvent), olderCount: z.number().int().min(0) });
export type JobEventPage = z.infer<typeof JobEventPage>;

/** `PUT /api/effort-default` body (admin): the default tier's name, or null to fall back to the server's FLOTILLA_DEFAULT_EFFORT. */
export const SetDefaultTierRequest = z.object({ tier: z.string().min(1).max(64).nullable() }).strict();
export type SetDefaultTierRequest = z.infer<typeof SetDefaultTierRequest>;
