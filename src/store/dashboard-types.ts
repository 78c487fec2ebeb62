import type { JobEvent } from '../protocol/index.js';
import type { RunnerAttemptRow } from './runner-attempts.js';
import type { TaskEventRow, TaskPromptRow } from './tasks-types.js';

/**
 * Store rows and methods of the dashboard's history views (issue 8, migration 0016).
 * Conventions as in types.ts: times epoch ms (server clock), ids positive integers.
 */

/** What happened to a runner (recorded by the server where it happens). */
export const RUNNER_EVENT_KINDS = ['connected', 'disconnected', 'offline', 'held', 'extended', 'resumed', 'capacity', 'revoked', 'update', 'update_failed'] as const;
export type RunnerEventKind = (typeof RUNNER_EVENT_KINDS)[number];

/** One line of a runner's history. `jobId`: the job it concerns, or null. */
export interface RunnerEventRow {
  id: number;
  runnerId: number;
  kind: RunnerEventKind;
  /** What a person reads, e.g. `held for 1h: upgrading the disk`. ≤ 1,000 characters. */
  text: string;
  jobId: number | null;
  at: number;
}

/** The job that ran turn `turn` of a task, and when the turn started (epoch ms). */
export interface TaskTurnRow {
  taskId: number;
  turn: number;
  jobId: number;
  createdAt: number;
}

/** The dashboard's store methods (store/runner-events.ts, runner-attempts.ts, task-conversation.ts, event-pages.ts, settings.ts). */
export interface DashboardStore {
  /**
   * Appends a line to runner `runnerId`'s history.
   * @throws Error naming the field when the kind is unknown, the text is empty or `now` is malformed.
   */
  recordRunnerEvent(runnerId: number, e: { kind: RunnerEventKind; text: string; jobId?: number | null }, now: number): Promise<RunnerEventRow>;
  /** The runner's history, newest first (id order), at most `limit` (1..500); `before`: an id cursor. */
  listRunnerEvents(runnerId: number, limit: number, before?: number): Promise<RunnerEventRow[]>;
  /**
   * The runner's recent jobs, one per attempt that ran on it (an attempt lost there and
   * retried elsewhere too), newest first (job id, then attempt, descending), at most `limit`
   * (1..100), each with its outcome there (store/runner-attempts.ts).
   * @throws Error when runnerId is not a positive integer or limit is not 1..100.
   */
  listRecentAttemptsForRunner(runnerId: number, limit: number): Promise<RunnerAttemptRow[]>;
  /**
   * The turns of a task with the job that ran each, newest first, at most `limit` (1..200);
   * `beforeTurn`: only turns < it. Recorded by {@link TaskStore.attachTurnJob}.
   */
  listTaskTurns(taskId: number, limit: number, beforeTurn?: number): Promise<TaskTurnRow[]>;
  /**
   * What woke the task in turns `fromTurn`..`toTurn` (inclusive; `toTurn` null = no upper
   * bound) and, with `pending`, what waits for its next turn (turn null): its prompts (with
   * their text) and its events, each in id order. At most 1,000 of each.
   */
  listTaskInputs(taskId: number, q: { fromTurn: number; toTurn: number | null; pending: boolean }): Promise<{ prompts: TaskPromptRow[]; events: TaskEventRow[] }>;
  /** The `message` events of these jobs (≤ 200 ids), by job then seq; at most `limit` (1..5,000) in all. */
  listJobMessages(jobIds: readonly number[], limit: number): Promise<JobEvent[]>;
  /**
   * A page of a job's events ending before seq `beforeSeq` (null: the newest), ascending, at
   * most `limit` (1..5,000): the tail first, older pages on demand. Seqs are 1..n with no gap.
   */
  listEventsBefore(jobId: number, beforeSeq: number | null, limit: number): Promise<JobEvent[]>;
  /** An account setting (parsed JSON), or null when not set. */
  getSetting(key: string): Promise<unknown>;
  /** Sets (or with null clears) an account setting. @throws Error naming a bad key (1..100 chars) or `now`. */
  setSetting(key: string, value: unknown, now: number): Promise<void>;
}
