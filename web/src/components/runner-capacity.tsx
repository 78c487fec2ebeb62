import { useEffect, useState } from 'react';
import { client, errorText, type Runner } from '../api.js';
import { ADMIN_ONLY } from '../session.js';

/** A runner's browser slots (1 when the API leaves them out). */
export function browserSlotsOf(r: Runner): number {
  return r.browserSlots ?? 1;
}

const SLOTS = [1, 2, 3, 4];

/**
 * Capacity settings (the owner's, `PATCH /api/runners/:id` via client.setRunnerCapacity):
 * parallel jobs 1–4 and browser slots 1–4, never more than parallel jobs (the rule of issue 5;
 * the server checks again and its error is shown). Admins only.
 */
export function CapacityCard({ runner, isAdmin, onSaved }: { runner: Runner; isAdmin: boolean; onSaved: () => void }) {
  const [capacity, setCapacity] = useState(runner.capacity);
  const [browserSlots, setBrowserSlots] = useState(browserSlotsOf(runner));
  const [error, setError] = useState('');
  const [saved, setSaved] = useState(false);
  const [busy, setBusy] = useState(false);
  // Follow the server's values until the person edits.
  const [dirty, setDirty] = useState(false);
  useEffect(() => {
    if (dirty) return;
    setCapacity(runner.capacity);
    setBrowserSlots(browserSlotsOf(runner));
  }, [runner, dirty]);
  const save = async () => {
    setError('');
    setSaved(false);
    setBusy(true);
    try {
      await client.setRunnerCapacity(runner.id, { capacity, browserSlots });
      setDirty(false);
      setSaved(true);
      onSaved();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  const tooMany = browserSlots > capacity;
  return (
    <div className="card" data-testid="capacity">
      <h3>Capacity</h3>
      <div className="inline">
        <label>
          Parallel jobs{' '}
          <select
            value={capacity}
            disabled={!isAdmin}
            onChange={(e) => {
              setCapacity(Number(e.target.value));
              setDirty(true);
            }}
            data-testid="capacity-jobs"
          >
            {SLOTS.map((n) => (
              <option key={n}>{n}</option>
            ))}
          </select>
        </label>
        <label>
          Browser slots{' '}
          <select
            value={browserSlots}
            disabled={!isAdmin}
            onChange={(e) => {
              setBrowserSlots(Number(e.target.value));
              setDirty(true);
            }}
            data-testid="capacity-browsers"
          >
            {SLOTS.map((n) => (
              <option key={n}>{n}</option>
            ))}
          </select>
        </label>
        <button disabled={!isAdmin || !dirty || tooMany || busy} title={isAdmin ? 'PATCH /api/runners/:id' : ADMIN_ONLY} onClick={save} data-testid="capacity-save">
          Save
        </button>
      </div>
      {tooMany && <p className="warn">Browser slots cannot be more than parallel jobs.</p>}
      {saved && <p className="muted">Saved.</p>}
      {error && <p className="error">{error}</p>}
    </div>
  );
}
