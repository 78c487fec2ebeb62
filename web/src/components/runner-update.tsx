import { useState } from 'react';
import { client, errorText, type Runner } from '../api.js';
import { ADMIN_ONLY } from '../session.js';

/** Statuses a runner can be told to update in: connected and not already updating. */
const CAN_UPDATE: ReadonlySet<Runner['status']> = new Set(['online', 'busy', 'on_hold', 'provisioning']);

/**
 * The Update button of a runner card (admins; `POST /api/runners/:id/update` via
 * client.updateRunner, the server's own version): the runner takes no new job, lets its running
 * ones finish, runs its update command and restarts on the new code (status `updating`). Shows
 * what was sent, or the server's refusal (offline, revoked, connected to another replica, the
 * runner inside `flotilla up`, which cannot update itself).
 */
export function UpdateRunnerButton({ runner, isAdmin, onSent }: { runner: Runner; isAdmin: boolean; onSent: () => void }) {
  const [note, setNote] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const update = async () => {
    setNote('');
    setError('');
    setBusy(true);
    try {
      const r = await client.updateRunner(runner.id);
      setNote(r.started ? `Update to ${r.version} sent` : `Already updating`);
      onSent();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  const can = CAN_UPDATE.has(runner.status);
  const title = !isAdmin ? ADMIN_ONLY : can ? 'Update: no new jobs, let running ones finish, run the update command, restart' : `cannot update while ${runner.status.replace('_', ' ')}`;
  return (
    <div className="inline" data-testid="runner-update">
      <button disabled={!isAdmin || !can || busy} title={title} onClick={update} data-testid="update-runner">
        Update
      </button>
      {note && <span className="muted" data-testid="update-note">{note}</span>}
      {error && (
        <span className="error" data-testid="update-error">
          {error}
        </span>
      )}
    </div>
  );
}
