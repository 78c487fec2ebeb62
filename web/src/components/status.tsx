/** Runner status word → colour class; the word is always shown too (not colour alone). */
export const STATUS_CLASS: Record<string, string> = {
  online: 'ok',
  busy: 'info',
  on_hold: 'warn',
  provisioning: 'warn',
  updating: 'warn',
  offline: 'bad',
  // Revoked on purpose and for good: shown, but not as an alarm.
  revoked: 'muted',
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

/** A job status word in its colour; `testid` defaults to `job-status`. */
export function JobStatusBadge({ status, testid = 'job-status' }: { status: string; testid?: string }) {
  return (
    <span className={`status ${JOB_CLASS[status] ?? ''}`} data-testid={testid}>
      {status}
    </span>
  );
}
