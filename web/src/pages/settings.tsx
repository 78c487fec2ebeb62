import { useState, type FormEvent } from 'react';
import { client, errorText, useApi } from '../api.js';
import { when } from '../format.js';
import { ADMIN_ONLY, useSession } from '../session.js';
import { EffortTiers } from '../components/effort-tiers.js';
import { ModelProviders } from '../components/model-providers.js';
import { Receivers } from '../components/receivers.js';

/** Settings (admins): users, API tokens, effort tiers, model providers and prices, receivers. Members read the effort tiers and the model providers and prices. */
export function SettingsPage() {
  const { isAdmin } = useSession();
  if (!isAdmin) {
    return (
      <section>
        <p className="empty">Only admins change settings. You are signed in as a member.</p>
        <EffortTiers isAdmin={false} />
        <ModelProviders isAdmin={false} />
      </section>
    );
  }
  return (
    <section>
      <h1>Settings</h1>
      <Users />
      <Tokens />
      <EffortTiers isAdmin />
      <ModelProviders isAdmin />
      <Receivers />
    </section>
  );
}

function Users() {
  const users = useApi(() => client.listUsers(), []);
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const [role, setRole] = useState<'member' | 'admin'>('member');
  const [error, setError] = useState('');
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError('');
    try {
      await client.createUser({ name, password, role });
      setName('');
      setPassword('');
      users.reload();
    } catch (err) {
      setError(errorText(err));
    }
  };
  return (
    <div className="card" data-testid="users">
      <h3>Users</h3>
      {users.error && <p className="error">{users.error.message}</p>}
      <table>
        <tbody>
          {(users.data ?? []).map((u) => (
            <tr key={u.id}>
              <td>{u.name}</td>
              <td>{u.role}</td>
              <td>{when(u.createdAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <form className="inline" onSubmit={submit}>
        <input placeholder="name" value={name} onChange={(e) => setName(e.target.value)} required aria-label="new user name" />
        <input placeholder="password (10+ characters)" type="password" autoComplete="new-password" value={password} onChange={(e) => setPassword(e.target.value)} required aria-label="new user password" />
        <select value={role} onChange={(e) => setRole(e.target.value as 'member' | 'admin')} aria-label="role">
          <option>member</option>
          <option>admin</option>
        </select>
        <button type="submit" title={ADMIN_ONLY}>
          Add user
        </button>
      </form>
      {error && <p className="error">{error}</p>}
    </div>
  );
}

function Tokens() {
  const tokens = useApi(() => client.listApiTokens(), []);
  const [name, setName] = useState('');
  const [role, setRole] = useState<'member' | 'admin'>('member');
  const [shown, setShown] = useState('');
  const [error, setError] = useState('');
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError('');
    try {
      const t = await client.createApiToken({ name, role });
      setShown(t.token);
      setName('');
      tokens.reload();
    } catch (err) {
      setError(errorText(err));
    }
  };
  const revoke = async (id: number) => {
    setError('');
    try {
      await client.revokeApiToken(id);
      tokens.reload();
    } catch (err) {
      setError(errorText(err));
    }
  };
  return (
    <div className="card" data-testid="api-tokens">
      <h3>API tokens</h3>
      {tokens.error && <p className="error">{tokens.error.message}</p>}
      <table>
        <tbody>
          {(tokens.data ?? []).map((t) => (
            <tr key={t.id}>
              <td>{t.name}</td>
              <td>{t.role}</td>
              <td>{when(t.createdAt)}</td>
              <td>
                <button className="link" onClick={() => revoke(t.id)}>
                  Revoke
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <form className="inline" onSubmit={submit}>
        <input placeholder="token name" value={name} onChange={(e) => setName(e.target.value)} required aria-label="token name" />
        <select value={role} onChange={(e) => setRole(e.target.value as 'member' | 'admin')} aria-label="token role">
          <option>member</option>
          <option>admin</option>
        </select>
        <button type="submit">Create token</button>
      </form>
      {shown && (
        <p>
          New token (shown once): <code className="secret" data-testid="new-token">{shown}</code>
        </p>
      )}
      {error && <p className="error">{error}</p>}
    </div>
  );
}
