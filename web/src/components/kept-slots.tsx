import { Link } from '../router.js';
import type { Runner } from '../api.js';

/**
 * The runner slots idle tasks keep (`keptSlots`, issue 7), after the slots its jobs hold:
 * ` · 1 kept by task #5 until 05:00:00`, each task linked; nothing when none. A runner reading
 * `0/2` while jobs wait for it had a slot kept: this says which task keeps it (fresh tester).
 */
export function KeptSlots({ runner }: { runner: Runner }) {
  const kept = runner.keptSlots ?? [];
  if (kept.length === 0) return null;
  return (
    <span className="muted" data-testid="kept-slots" title="A task keeps its slot for its agent's idle time after each reply, so its next turn starts at once; suspending the task frees it.">
      {` · ${kept.length} kept by `}
      {kept.map((k, i) => (
        <span key={k.taskId}>
          {i > 0 ? ', ' : ''}
          <Link to={`/tasks/${k.taskId}`}>task #{k.taskId}</Link> until {new Date(k.until).toLocaleTimeString()}
        </span>
      ))}
    </span>
  );
}
