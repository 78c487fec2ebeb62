/** Task status colours (the word is always shown too). */
const TASK_CLASS: Record<string, string> = {
  idle: 'ok',
  running: 'info',
  suspended: 'warn',
  completed: 'muted',
  workspace_lost: 'bad',
};

/** A task's status word in its colour. */
export function TaskStatusBadge({ status }: { status: string }) {
  return (
    <span className={`status ${TASK_CLASS[status] ?? ''}`} data-testid="task-status">
      {status.replace('_', ' ')}
    </span>
  );
}
