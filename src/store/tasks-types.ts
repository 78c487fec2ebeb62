import type { JobStatus, ReceiverPolicies, ReceiverProvider, TaskStatus } from '../protocol/index.js';

/**
 * Store rows and methods of issue 7 (tasks, receivers, deliveries, task events; migration
 * 0006). Conventions as in types.ts: times epoch ms (server clock), ids positive integers.
 */

/** A task as stored. `coalesceMs`: the coalescing window, ms (0..86,400,000). */
export interface TaskRow {
  id: number;
  agent: string;
  title: string;
  input: Record<string, unknown>;
  status: TaskStatus;
  /** Keys it owns (active while the task is not completed), sorted. */
  keys: string[];
  coalesceMs: number;
  currentJobId: number | null;
  workspaceJobId: number | null;
  runnerId: number | null;
  sessionId: string | null;
  /** Turns started so far. */
  turn: number;
  /** End of the current coalescing window (epoch ms), or null. */
  windowUntil: number | null;
  /** When the trailing wake is due (epoch ms), or null. */
  trailingDueAt: number | null;
  /** Newest `occurredAt` of the events seen (epoch ms), or null. */
  lastEventAt: number | null;
  /** Idle timeout (0012): epoch ms until which the task keeps its runner slot after its last reply, or null (none held). */
  slotUntil: number | null;
  error: string | null;
  /** Prompts not yet taken by a turn. */
  queuedPrompts: number;
  /** Events not yet carried by a turn. */
  pendingEvents: number;
  /** The budget of all the task's turns together (0026), µ$; null: none (each turn is a tree with its agent's `defaultBudgetUsd`). */
  budgetMicros: number | null;
  /** What the task's turns' job trees have spent (settled), µ$: the sum over its turns (0016 `task_turns`) of their trees' `spent_micros`. */
  spentMicros: number;
  /** What those trees hold reserved for model calls in flight, µ$. */
  reservedMicros: number;
  /** The status of the current turn's job (`currentJobId`), or null when there is none. */
  turnJobStatus: JobStatus | null;
  /** Jobs of the current turn's tree paused for budget (its own job or children; endReason `budget`); 0 without a turn. */
  turnPausedJobs: number;
  createdAt: number;
  updatedAt: number;
}

export interface NewTask {
  agent: string;
  title: string;
  input: Record<string, unknown>;
  /** Resource keys; each may be owned by one active (not completed) task only. */
  keys: string[];
  coalesceMs: number;
  /** The budget of the task's turns together, µ$ (1 .. $100,000), or null/absent for none. */
  budgetMicros?: number | null;
  now: number;
}

export interface TaskPromptRow {
  id: number;
  taskId: number;
  text: string;
  turn: number | null;
  createdAt: number;
}

export interface NewTaskEvent {
  receiverId: number | null;
  key: string | null;
  /** e.g. `issues.assigned`, `issue_comment.created`, `alert`. */
  kind: string;
  actor: string | null;
  /** Text the agent is shown (storable: NUL and lone surrogates become U+FFFD). */
  summary: string;
  /** When it happened at the source (epoch ms); judges staleness. */
  occurredAt: number;
}

export interface TaskEventRow extends NewTaskEvent {
  id: number;
  taskId: number | null;
  receivedAt: number;
  /** The turn that carried it to the agent, or null while pending (or unmatched). */
  turn: number | null;
}

/** A turn just claimed by {@link TaskStore.claimTaskTurn}: what it carries. */
export interface TurnClaim {
  task: TaskRow;
  turn: number;
  events: TaskEventRow[];
  prompts: TaskPromptRow[];
}

/** A receiver as stored, without its secret or token hash. */
export interface ReceiverRow {
  id: number;
  name: string;
  provider: ReceiverProvider;
  auth: 'hmac' | 'bearer';
  keyExpr: string | null;
  summaryExpr: string | null;
  fallbackTaskId: number | null;
  policies: ReceiverPolicies;
  createdAt: number;
}

export interface NewReceiver extends Omit<ReceiverRow, 'id' | 'createdAt'> {
  /** HMAC secret (kept as is: verification needs it), or null. */
  secret: string | null;
  /** SHA-256 hex of a bearer token, or null. */
  tokenHash: string | null;
  now: number;
}

/** One delivery to ingest in one transaction (see {@link TaskStore.ingestDelivery}). */
export interface NewDelivery {
  receiverId: number;
  /** The sender's delivery id (`X-GitHub-Delivery`, `X-Gitea-Delivery`, or a body hash). */
  deliveryId: string;
  event: NewTaskEvent;
  /** Create this task when no active task owns `event.key` (an `assign` policy). */
  createTask?: Omit<NewTask, 'now'>;
  /** Also look at completed tasks owning the key (a reopen). */
  includeCompleted?: boolean;
  /** Task taking events nobody owns, or null. */
  fallbackTaskId: number | null;
  /**
   * Also note the event on the task's coalescing window in the same transaction (what
   * {@link TaskStore.noteTaskEvent} does, saving its round trips): `always`, or `unless_stale`
   * (a stale event is recorded but not noted). Only for a task that is `idle` or `running`.
   * Absent: not noted (the caller decides later, e.g. on close/reopen).
   */
  coalesce?: 'always' | 'unless_stale';
  now: number;
}

/** The coalescing decision of an ingested event: wake now, wait for the trailing wake at `trailingDueAt` (epoch ms), or null (not noted). */
export type WindowDecision = { decision: 'wake' } | { decision: 'coalesced'; trailingDueAt: number } | null;

/**
 * What ingesting one delivery did. A repeat (`duplicate`) carries the task the first delivery
 * of that id went to (`taskId`; null when it went to no task, or was stored before 0015).
 */
export type IngestResult =
  | { duplicate: true; taskId: number | null }
  | { duplicate: false; task: TaskRow | null; created: boolean; stale: boolean; event: TaskEventRow; window?: WindowDecision };

/** Fields {@link TaskStore.updateTask} may set. */
export interface TaskUpdate {
  status?: TaskStatus;
  error?: string | null;
  currentJobId?: number | null;
  workspaceJobId?: number | null;
  runnerId?: number | null;
  sessionId?: string | null;
  trailingDueAt?: number | null;
  /** Epoch ms until which the task keeps its runner slot, or null to release it (0012). */
  slotUntil?: number | null;
  /** The budget of the task's turns together, µ$ (≥ 1), or null for none (0026). */
  budgetMicros?: number | null;
  /** Condition: apply only while the task's current job is this one. */
  whereCurrentJobId?: number;
}

/** A runner slot kept by a task between turns (see {@link TaskStore.listTaskSlots}). */
export interface TaskSlot {
  taskId: number;
  runnerId: number;
  /** The task's workspace key (its `workspaceJobId`). */
  workspace: number;
  /** Epoch ms when the slot is released. */
  until: number;
}

/** Store methods of issue 7 (store/tasks.ts, tasks-turns.ts, receivers.ts). */
export interface TaskStore {
  /** @throws Error `store: key ... is owned by task N` when an active task owns a key; Error naming a bad field. */
  createTask(t: NewTask): Promise<TaskRow>;
  getTask(id: number): Promise<TaskRow | null>;
  /** Newest first; `before` an id cursor; limit 1..1000. */
  listTasks(q: { status?: TaskStatus; limit: number; before?: number }): Promise<TaskRow[]>;
  /** The active task owning `key`; with `includeCompleted`, else the newest completed one. Null when none. */
  findTaskByKey(key: string, includeCompleted?: boolean): Promise<TaskRow | null>;
  /** Conditional update: only when the status is one of `from` (null: any). Null when the condition failed or no task. */
  updateTask(id: number, from: readonly TaskRow['status'][] | null, set: TaskUpdate, now: number): Promise<TaskRow | null>;
  /** → `completed`, keys released (inactive), trailing wake cleared. Null when already completed or missing. */
  completeTask(id: number, now: number): Promise<TaskRow | null>;
  /**
   * Adds `addMicros` to the task's budget (0026) atomically, never past `capMicros` (µ$): the
   * task after it, `no_budget` (it has none), `{ capped }` (refused: the budget now), or null
   * (no task). @throws Error naming a field that is not a positive integer.
   */
  addTaskBudget(id: number, addMicros: number, capMicros: number, now: number): Promise<TaskRow | 'no_budget' | { capped: number } | null>;
  /** The task of which job `jobId` runs a turn (0016 `task_turns`), or null. */
  taskOfTurnJob(jobId: number): Promise<number | null>;
  /**
   * completed → idle, keys active again. Null when not completed or missing.
   * @throws Error `store: key ... is owned by task N` when another active task took a key meanwhile.
   */
  reopenTask(id: number, now: number): Promise<TaskRow | null>;
  enqueueTaskPrompt(taskId: number, text: string, now: number): Promise<TaskPromptRow>;
  /** Records an event for a task (or unmatched: null) outside any delivery (e.g. a prompt from the API). */
  addTaskEvent(taskId: number | null, e: NewTaskEvent, now: number): Promise<TaskEventRow>;
  /** Newest first, at most `limit` (1..1000): of one task, or (taskId null) the unmatched ones. */
  listTaskEvents(taskId: number | null, limit: number): Promise<TaskEventRow[]>;
  /**
   * Starts a turn, one transaction: only when the task is `idle` with no current job and has
   * pending events or prompts: status `running`, turn + 1, the pending events and prompts
   * marked with that turn (in id order), trailing wake cleared. Null otherwise.
   */
  claimTaskTurn(taskId: number, now: number): Promise<TurnClaim | null>;
  /** Records the job running turn `turn`. False when the turn is not current. */
  attachTurnJob(taskId: number, turn: number, jobId: number, now: number): Promise<boolean>;
  /** Undoes a claimed turn whose job could not be created: events and prompts pending again, status `idle`. */
  abandonTaskTurn(taskId: number, turn: number, now: number): Promise<void>;
  /**
   * Tasks whose current job is set (`running`): (taskId, jobId), with the job's status (null:
   * no such job), read in the same query so that a poll over many running tasks need not read
   * each job (the task engine reads only the ended ones).
   */
  listTaskTurnJobs(): Promise<{ taskId: number; jobId: number; jobStatus: JobStatus | null }[]>;
  /**
   * Coalescing, decided atomically: when no window is open (`windowUntil` null or ≤ now) opens
   * one until now + coalesceMs and returns `wake`; otherwise sets the trailing wake at the
   * window's end (when not set yet) and returns `coalesced` with its due time (epoch ms).
   * Null when there is no such task.
   */
  noteTaskEvent(taskId: number, now: number): Promise<{ decision: 'wake' } | { decision: 'coalesced'; trailingDueAt: number } | null>;
  /**
   * Runner slots kept by tasks between turns (idle timeout, 0012): tasks `idle` or `running`
   * with a runner and a workspace whose `slotUntil` is after `now` (epoch ms). `workspace` is
   * the task's workspace key (`workspaceJobId`): its next turn's job takes the slot (also while
   * that job is still queued, so an older queued job cannot take it first).
   */
  listTaskSlots(now: number): Promise<TaskSlot[]>;
  /** Trailing wakes (taskId, dueAt) not yet claimed, due first. */
  listTrailingWakes(): Promise<{ taskId: number; dueAt: number }[]>;
  /**
   * Claims a due trailing wake with a conditional UPDATE (clears it when still `dueAt` and
   * ≤ now; opens a new window): true for exactly one caller across replicas.
   */
  claimTrailingWake(taskId: number, dueAt: number, now: number): Promise<boolean>;

  /** @throws Error `store: receiver name ... is taken`; Error naming a bad field. */
  createReceiver(r: NewReceiver): Promise<ReceiverRow>;
  listReceivers(): Promise<ReceiverRow[]>;
  getReceiver(id: number): Promise<ReceiverRow | null>;
  /** The receiver with this name and its credentials (for verification only), or null. */
  findReceiverCredentials(name: string): Promise<{ receiver: ReceiverRow; secret: string | null; tokenHash: string | null } | null>;
  /** Deletes a receiver (its deliveries too; its events stay, receiver null). True when it existed. */
  deleteReceiver(id: number): Promise<boolean>;
  /**
   * One delivery, one transaction: stores (receiver, delivery id) under its unique constraint
   * (already there → `{ duplicate: true, taskId }` with the task the first one went to, nothing
   * else done); finds the owning task (active;
   * with `includeCompleted` the newest completed one too), else creates `createTask`, else the
   * fallback task; stores the event for it (task null: unmatched); raises the task's
   * `lastEventAt`. `stale`: the event is older than what the task already saw.
   */
  ingestDelivery(d: NewDelivery): Promise<IngestResult>;
  /**
   * Several deliveries in one transaction (one commit for all), each as {@link ingestDelivery};
   * results in the order given (a repeat of an earlier delivery of the batch is a duplicate
   * answering that one's task). All or nothing: on any error nothing of the batch is stored and
   * it is thrown (the caller may then ingest them one by one). At most 500.
   */
  ingestDeliveries(ds: readonly NewDelivery[]): Promise<IngestResult[]>;
}
