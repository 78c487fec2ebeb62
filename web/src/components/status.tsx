/** Runner status word → colour class; the word is always shown too (not colour alone). */
export const STATUS_CLASS: Record<string, string> = {
  online: 'ok',
  busy: 'info',
  on_hold: 'warn',
  provisioning: 'warn',
  updating: 'warn',
  offline: 'bad',
};

/** Job status colours: the word is always shown. */
const JOB_CLASS: Record<string, string> = {
  queued: 'muted',
  assigned: 'info',
  running: 'info',
  paused: 'warn',
  cancelling: 'warn',
  succeeded: 'ok',
  failed: 'bad',
  cancelled: 'warn',
  lost: 'bad',
};

export function JobStatusBadge({ status }: { status: string }) {
  return (
    <span className={`status ${JOB_CLASS[status] ?? ''}`} data-testid="job-status">
      {status}
    </span>
  );
}
