import { useState, type FormEvent } from 'react';
import { client, errorText, type Principal } from '../api.js';

/** Sign-in with a user name and password (an admin creates users in Settings or with the admin API token). */
export function SignInPage({ onSignedIn }: { onSignedIn: (p: Principal) => void }) {
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError('');
    try {
      onSignedIn((await client.signIn({ name, password })).principal);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form className="signin card" onSubmit={submit}>
      <h1>Flotilla</h1>
      <label>
        User name
        <input name="name" autoComplete="username" value={name} onChange={(e) => setName(e.target.value)} required />
      </label>
      <label>
        Password
        <input name="password" type="password" autoComplete="current-password" value={password} onChange={(e) => setPassword(e.target.value)} required />
      </label>
      {error && <p className="error">{error}</p>}
      <button type="submit" className="primary" disabled={busy}>
        {busy ? 'Signing in…' : 'Sign in'}
      </button>
    </form>
  );
}
