import { useState, type FormEvent } from 'react';
import { client, errorText, useApi } from '../api.js';
import { ADMIN_ONLY } from '../session.js';

/** Effort levels a tier may name (protocol EffortLevel; Claude Code 2.1 `--effort`). */
const LEVELS = ['low', 'medium', 'high', 'xhigh', 'max'] as const;
type Level = (typeof LEVELS)[number];

/**
 * Effort tiers (issue 8): every tier in effect (`GET /api/effort-tiers`: built-in, configured,
 * account) and which tier each agent's jobs run at: its own, else the account default tier,
 * else (no default) its own model. Admins add or replace account tiers (model +
 * effort level, `PUT /api/effort-tiers/:name`), delete them, and set the account default tier
 * (`PUT /api/effort-default`; "none" falls back to the server's setting); members read. The server
 * checks again and its error is shown.
 */
export function EffortTiers({ isAdmin }: { isAdmin: boolean }) {
  const tiers = useApi(() => client.listEffortTiers(), []);
  const agents = useApi(() => client.listAgents(), []);
  const [name, setName] = useState('');
  const [model, setModel] = useState('');
  const [level, setLevel] = useState<Level>('high');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  // The default picked in the form; undefined = not touched (show the server's).
  const [pick, setPick] = useState<string | undefined>(undefined);
  const run = async (what: () => Promise<unknown>) => {
    setError('');
    setBusy(true);
    try {
      await what();
      tiers.reload();
      return true;
    } catch (err) {
      setError(errorText(err));
      return false;
    } finally {
      setBusy(false);
    }
  };
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (await run(() => client.setEffortTier(name.trim(), model.trim(), level))) {
      setName('');
      setModel('');
    }
  };
  const list = tiers.data?.tiers ?? [];
  const current = tiers.data?.defaultTier ?? '';
  const chosen = pick ?? (tiers.data?.defaultSource === 'account' ? current : '');
  const saveDefault = async (e: FormEvent) => {
    e.preventDefault();
    if (await run(() => client.setDefaultEffortTier(chosen === '' ? null : chosen))) setPick(undefined);
  };
  return (
    <div className="card" data-testid="effort-tiers">
      <h3>Effort tiers</h3>
      <p className="muted">A tier is a model and an effort level, picked by run &gt; step &gt; playbook &gt; agent &gt; account default.</p>
      {tiers.error && <p className="error">{tiers.error.message}</p>}
      {!tiers.data && !tiers.error && <p className="empty">Loading…</p>}
      <form className="inline" onSubmit={(e) => void saveDefault(e)} data-testid="tier-default-form">
        <label htmlFor="tier-default">Account default</label>
        <select id="tier-default" value={chosen} onChange={(e) => setPick(e.target.value)} disabled={!isAdmin} data-testid="tier-default">
          <option value="">none (server setting)</option>
          {list.map((t) => (
            <option key={t.name} value={t.name}>
              {t.name}
            </option>
          ))}
        </select>
        <button type="submit" disabled={!isAdmin || busy || !tiers.data} title={isAdmin ? 'Set the tier jobs run at when nothing else picks one' : ADMIN_ONLY} data-testid="tier-default-save">
          Set default
        </button>
        <span className="muted" data-testid="tier-default-now">
          {current ? `in effect: ${current} (${tiers.data?.defaultSource === 'account' ? 'set here' : 'server setting'})` : 'in effect: none'}
        </span>
      </form>
      <table data-testid="tier-list">
        <thead>
          <tr>
            <th>Name</th>
            <th>Model</th>
            <th>Effort</th>
            <th>Source</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {list.map((t) => (
            <tr key={t.name} data-testid={`tier-${t.name}`}>
              <td>
                {t.name}
                {t.name === tiers.data?.defaultTier && <span className="muted"> (default)</span>}
              </td>
              <td>{t.model}</td>
              <td>{t.level}</td>
              <td>{t.source}</td>
              <td>
                {t.source === 'account' && (
                  <button type="button" disabled={!isAdmin || busy} title={isAdmin ? 'Delete this account tier' : ADMIN_ONLY} onClick={() => void run(() => client.deleteEffortTier(t.name))} data-testid={`tier-delete-${t.name}`}>
                    Delete
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <form className="inline" onSubmit={(e) => void submit(e)} data-testid="tier-form">
        <input placeholder="name" value={name} onChange={(e) => setName(e.target.value)} disabled={!isAdmin} required data-testid="tier-name" />
        <input placeholder="model" value={model} onChange={(e) => setModel(e.target.value)} disabled={!isAdmin} required data-testid="tier-model" />
        <select value={level} onChange={(e) => setLevel(e.target.value as Level)} disabled={!isAdmin} data-testid="tier-level">
          {LEVELS.map((l) => (
            <option key={l}>{l}</option>
          ))}
        </select>
        <button type="submit" disabled={!isAdmin || busy} title={isAdmin ? 'Add or replace this tier' : ADMIN_ONLY} data-testid="tier-save">
          Save tier
        </button>
      </form>
      {error && <p className="error">{error}</p>}
      <h4>Agents</h4>
      <table>
        <tbody>
          {(agents.data ?? []).map((a) => (
            <tr key={a.name}>
              <td>{a.name}</td>
              <td data-testid="agent-tier">{a.effort ?? (current ? <span className="muted">default tier {current}</span> : <span className="muted">agent’s model {a.model}</span>)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
