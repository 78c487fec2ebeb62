import { useState } from 'react';
import { client, errorText, type Runner } from '../api.js';
import { labelsText } from '../format.js';
import { ADMIN_ONLY } from '../session.js';
import { shellQuote } from '../../../src/protocol/shell-quote.js';

/**
 * Token rotation: revokes the runner (its credential, connection and job tokens end; its jobs
 * are lost or retried, see POST /api/runners/:id/revoke) and creates a single-use registration
 * token with the same labels, shown once, to register the machine again. Two presses: the
 * first asks to confirm. Admins only.
 */
export function RotateTokenCard({ runner, isAdmin, onDone }: { runner: Runner; isAdmin: boolean; onDone: () => void }) {
  const [confirm, setConfirm] = useState(false);
  const [token, setToken] = useState<{ token: string; expiresAt: string | number } | null>(null);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const rotate = async () => {
    setError('');
    setBusy(true);
    try {
      if (!runner.revokedAt) await client.revokeRunner(runner.id);
      const t = await client.createRunnerToken({ labels: runner.labels });
      setToken(t);
      setConfirm(false);
      onDone();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  const labels = labelsText(runner.labels);
  return (
    <div className="card" data-testid="rotate">
      <h3>Token</h3>
      <p className="muted">
        {runner.revokedAt
          ? 'This runner is revoked. Create a registration token to bring the machine back.'
          : 'Rotating revokes this runner’s credential now and gives a new single-use registration token for the same machine. The runner inside `flotilla up` cannot take a new token: rotating it stops `flotilla up` (start it again after deleting its credential file, as it then says).'}
      </p>
      {!confirm ? (
        <button className="danger" disabled={!isAdmin || busy} title={isAdmin ? '' : ADMIN_ONLY} onClick={() => setConfirm(true)} data-testid="rotate-start">
          {runner.revokedAt ? 'New registration token' : 'Rotate token…'}
        </button>
      ) : (
        <div className="inline">
          <button className="danger" disabled={busy} onClick={rotate} data-testid="rotate-confirm">
            {runner.revokedAt ? 'Create token' : `Revoke ${runner.name} and create a token`}
          </button>
          <button onClick={() => setConfirm(false)}>Keep it</button>
        </div>
      )}
      {token && (
        <div data-testid="new-runner-token">
          <p>
            New registration token (shown once; expires {typeof token.expiresAt === 'number' ? new Date(token.expiresAt).toISOString() : token.expiresAt}):
          </p>
          <code className="secret" data-testid="runner-token">
            {token.token}
          </code>
          <p className="muted">
            On the machine: <code>flotilla runner --server {shellQuote(window.location.origin)} --token … --name {shellQuote(runner.name)}{labels ? ` --labels ${shellQuote(labels)}` : ''}</code>
          </p>
        </div>
      )}
      {error && <p className="error">{error}</p>}
    </div>
  );
}
