import { useState, type FormEvent } from 'react';
import { client, errorText, useApi, type ReceiverProvider } from '../api.js';
import { when } from '../format.js';

const PROVIDERS: ReceiverProvider[] = ['github', 'gitea', 'generic'];

/**
 * Receivers (issue 7; GET/POST/DELETE /api/receivers): the authenticated endpoints events come
 * in through. Creating one shows its secret once (to paste into the sender's webhook settings).
 * A generic receiver needs a CEL `keyExpr` over `payload` giving the resource key.
 */
export function Receivers() {
  const list = useApi(() => client.listReceivers(), []);
  const [name, setName] = useState('');
  const [provider, setProvider] = useState<ReceiverProvider>('github');
  const [auth, setAuth] = useState<'hmac' | 'bearer'>('hmac');
  const [keyExpr, setKeyExpr] = useState('');
  const [secret, setSecret] = useState<{ name: string; path: string; secret: string } | null>(null);
  const [error, setError] = useState('');
  const create = async (e: FormEvent) => {
    e.preventDefault();
    setError('');
    try {
      const r = await client.createReceiver({ name: name.trim(), provider, auth, ...(provider === 'generic' && keyExpr.trim() ? { keyExpr: keyExpr.trim() } : {}) });
      setSecret({ name: r.receiver.name, path: r.receiver.path, secret: r.secret });
      setName('');
      setKeyExpr('');
      list.reload();
    } catch (err) {
      setError(errorText(err));
    }
  };
  const remove = async (id: number) => {
    setError('');
    try {
      await client.deleteReceiver(id);
      list.reload();
    } catch (err) {
      setError(errorText(err));
    }
  };
  return (
    <div className="card" data-testid="receivers">
      <h3>Receivers</h3>
      {list.error && <p className="error">{list.error.message}</p>}
      {!list.data && !list.error && <p className="empty">Loading…</p>}
      {list.data?.length === 0 && <p className="muted">No receivers.</p>}
      <table>
        <tbody>
          {(list.data ?? []).map((r) => (
            <tr key={r.id}>
              <td>{r.name}</td>
              <td>
                {r.provider} <span className="muted">({r.auth})</span>
              </td>
              <td>
                <code>{r.path}</code>
              </td>
              <td className="muted">
                {r.policies.assign ? `assign to ${r.policies.assign.login} → ${r.policies.assign.agent}; ` : ''}
                {r.policies.completeOnClose ? 'close completes' : ''}
                {r.keyExpr ? ` key: ${r.keyExpr}` : ''}
              </td>
              <td>{when(r.createdAt)}</td>
              <td>
                <button className="link" onClick={() => remove(r.id)}>
                  Delete
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <form className="inline" onSubmit={create}>
        <input placeholder="name (a-z, 0-9, -)" value={name} onChange={(e) => setName(e.target.value)} required aria-label="receiver name" />
        <select value={provider} onChange={(e) => setProvider(e.target.value as ReceiverProvider)} aria-label="receiver provider">
          {PROVIDERS.map((p) => (
            <option key={p}>{p}</option>
          ))}
        </select>
        <select value={auth} onChange={(e) => setAuth(e.target.value as 'hmac' | 'bearer')} aria-label="receiver auth">
          <option>hmac</option>
          <option>bearer</option>
        </select>
        {provider === 'generic' && <input placeholder="key: CEL, e.g. payload.groupKey" value={keyExpr} onChange={(e) => setKeyExpr(e.target.value)} aria-label="receiver key expression" />}
        <button type="submit" data-testid="add-receiver">
          Add receiver
        </button>
      </form>
      {secret && (
        <p data-testid="receiver-secret">
          {secret.name} at <code>{window.location.origin + secret.path}</code>, secret (shown once): <code className="secret">{secret.secret}</code>
        </p>
      )}
      {error && <p className="error">{error}</p>}
    </div>
  );
}
