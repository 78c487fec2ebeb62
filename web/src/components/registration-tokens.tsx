import { useState, type FormEvent } from 'react';
import { client, errorText, useApi, type RunnerTokenInfo } from '../api.js';
import { labelsText, when } from '../format.js';
import { ADMIN_ONLY } from '../session.js';
import { parseLabelList } from '../../../src/protocol/labels.js';
import { shellQuote } from '../../../src/protocol/shell-quote.js';

/** Registration token status word → colour class (the word is shown too). */
const TOKEN_CLASS: Record<RunnerTokenInfo['status'], string> = { live: 'ok', used: 'info', expired: 'warn', revoked: 'bad' };

/**
 * Runner registration tokens (`GET /api/runner-tokens[?all=true]`, admin): the live ones (unused,
 * unexpired, not revoked), or with "Show all" every one with its status. Revoke (`POST
 * /api/runner-tokens/{id}/revoke`) takes two presses: the first asks to confirm. "New registration
 * token" creates one with the given labels and shows it once with the line to start a runner.
 * The list is for admins only (the API refuses members), so members see the buttons disabled.
 */
export function RegistrationTokens({ isAdmin }: { isAdmin: boolean }) {
  const [all, setAll] = useState(false);
  const tokens = useApi(() => (isAdmin ? client.listRunnerTokens({ all }) : Promise.resolve([])), [all, isAdmin], 10_000);
  const [confirm, setConfirm] = useState<number | null>(null);
  const [labels, setLabels] = useState('');
  const [created, setCreated] = useState<{ id?: number; token: string; expiresAt: string | number; labels: string } | null>(null);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const run = async (what: () => Promise<unknown>) => {
    setError('');
    setBusy(true);
    try {
      await what();
      return true;
    } catch (e) {
      setError(errorText(e));
      return false;
    } finally {
      setBusy(false);
      tokens.reload();
    }
  };
  const revoke = (id: number) => run(() => client.revokeRunnerToken(id)).then(() => setConfirm(null));
  const create = async (e: FormEvent) => {
    e.preventDefault();
    await run(async () => {
      const parsed = parseLabelList(labels);
      const t = await client.createRunnerToken({ labels: parsed });
      setCreated({ id: t.id, token: t.token, expiresAt: t.expiresAt, labels: labelsText(parsed) });
      setLabels('');
    });
  };
  const list = tokens.data ?? [];
  return (
    <div className="card" data-testid="registration-tokens">
      <div className="bar">
        <h3>Registration tokens</h3>
        <label className="check">
          <input type="checkbox" checked={all} onChange={(e) => setAll(e.target.checked)} disabled={!isAdmin} data-testid="reg-tokens-all" /> Show all
        </label>
      </div>
      {!isAdmin && <p className="muted">Only admins can list, create and revoke registration tokens.</p>}
      {tokens.error && <p className="error">{errorText(tokens.error)}</p>}
      {isAdmin && tokens.data && list.length === 0 && <p className="empty">{all ? 'No registration tokens yet.' : 'No live registration tokens.'}</p>}
      {list.length > 0 && (
        <table>
          <thead>
            <tr>
              <th>Id</th>
              <th>Labels</th>
              {all && <th>Status</th>}
              <th>Created</th>
              <th>Expires</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {list.map((t) => (
              <tr key={t.id} data-testid={`reg-token-${t.id}`}>
                <td>#{t.id}</td>
                <td data-testid="reg-token-labels">{labelsText(t.labels) || <span className="muted">no labels</span>}</td>
                {all && (
                  <td>
                    <span className={`status ${TOKEN_CLASS[t.status]}`} title={t.revokedAt ? `revoked ${t.revokedAt}` : t.usedAt ? `used ${t.usedAt}` : ''} data-testid="reg-token-status">
                      {t.status}
                    </span>
                  </td>
                )}
                <td title={t.createdAt} data-testid="reg-token-created">
                  {when(t.createdAt)}
                </td>
                <td title={t.expiresAt} data-testid="reg-token-expires">
                  {when(t.expiresAt)}
                </td>
                <td>
                  {t.status === 'live' &&
                    (confirm !== t.id ? (
                      <button className="danger" disabled={!isAdmin || busy} title={isAdmin ? 'No runner can register with it any more' : ADMIN_ONLY} onClick={() => setConfirm(t.id)} data-testid="reg-token-revoke">
                        Revoke…
                      </button>
                    ) : (
                      <div className="inline">
                        <button className="danger" disabled={!isAdmin || busy} onClick={() => void revoke(t.id)} data-testid="reg-token-revoke-confirm">
                          Revoke #{t.id}
                        </button>
                        <button onClick={() => setConfirm(null)}>Keep it</button>
                      </div>
                    ))}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form className="inline" onSubmit={(e) => void create(e)}>
        <input placeholder="labels k=v,… (optional)" value={labels} onChange={(e) => setLabels(e.target.value)} disabled={!isAdmin} aria-label="registration token labels" data-testid="reg-token-labels-input" />
        <button type="submit" disabled={!isAdmin || busy} title={isAdmin ? 'A single-use token to register a runner (valid 1 h)' : ADMIN_ONLY} data-testid="reg-token-create">
          New registration token
        </button>
      </form>
      {created && (
        <div data-testid="new-registration-token">
          <p>
            New registration token{created.id !== undefined ? ` #${created.id}` : ''} (shown once; expires {typeof created.expiresAt === 'number' ? new Date(created.expiresAt).toISOString() : created.expiresAt}):
          </p>
          <code className="secret" data-testid="registration-token">
            {created.token}
          </code>
          <p className="muted">
            On the machine: <code>flotilla runner --server {shellQuote(window.location.origin)} --token …{created.labels ? ` --labels ${shellQuote(created.labels)}` : ''}</code>
          </p>
        </div>
      )}
      {error && <p className="error">{error}</p>}
    </div>
  );
}
