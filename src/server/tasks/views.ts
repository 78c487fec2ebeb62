import type { Receiver, Task, TaskEvent } from '../../protocol/index.js';
import type { ReceiverRow, TaskEventRow, TaskRow } from '../../store/types.js';
import { iso, isoOrNull } from '../views.js';

/** A store task row (times ms, window ms) → the API's {@link Task} (ISO times, seconds). */
export function taskView(t: TaskRow): Task {
  return {
    id: t.id,
    agent: t.agent,
    title: t.title,
    status: t.status,
    keys: t.keys,
    input: t.input,
    coalesceSeconds: Math.round(t.coalesceMs / 1000),
    currentJobId: t.currentJobId,
    workspaceJobId: t.workspaceJobId,
    runnerId: t.runnerId,
    sessionId: t.sessionId,
    turns: t.turn,
    queuedPrompts: t.queuedPrompts,
    pendingEvents: t.pendingEvents,
    trailingWakeAt: isoOrNull(t.trailingDueAt),
    slotHeldUntil: t.status === 'idle' || t.status === 'running' ? isoOrNull(t.slotUntil) : null,
    error: t.error,
    budgetMicros: t.budgetMicros,
    spentMicros: t.spentMicros,
    reservedMicros: t.reservedMicros,
    turnJobStatus: t.turnJobStatus,
    turnPausedJobs: t.turnPausedJobs,
    createdAt: iso(t.createdAt),
    updatedAt: iso(t.updatedAt),
  };
}

/** A stored task event → the API's {@link TaskEvent}; `receivers` maps receiver ids to names. */
export function taskEventView(e: TaskEventRow, receivers: ReadonlyMap<number, string>): TaskEvent {
  return {
    id: e.id,
    taskId: e.taskId,
    receiver: e.receiverId === null ? null : (receivers.get(e.receiverId) ?? null),
    key: e.key,
    kind: e.kind,
    actor: e.actor,
    summary: e.summary,
    occurredAt: iso(e.occurredAt),
    turn: e.turn,
  };
}

/** A stored receiver → the API's {@link Receiver} (never a secret). */
export function receiverView(r: ReceiverRow): Receiver {
  return { ...r, path: `/hooks/${r.provider}/${r.name}`, createdAt: iso(r.createdAt) };
}
