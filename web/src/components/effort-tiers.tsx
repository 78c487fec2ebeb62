import { client, useApi } from '../api.js';

/** Tier names every account has (protocol: CreateJobRequest.effort); their models are the server's (core/effort.ts). */
const BUILTIN = ['max', 'high', 'medium'];

/**
 * Effort tiers, read-only (there is no API to change them yet): the built-in names and which
 * tier each agent asks for (an agent without one keeps its model and the harness's default).
 */
export function EffortTiers() {
  const agents = useApi(() => client.listAgents(), []);
  const list = agents.data ?? [];
  return (
    <div className="card" data-testid="effort-tiers">
      <h3>Effort tiers</h3>
      <p className="muted">
        Built in: {BUILTIN.map((t) => <code key={t}>{t} </code>)}— picked by run &gt; step &gt; playbook &gt; agent &gt; account default. Read-only here.
      </p>
      {agents.error && <p className="error">{agents.error.message}</p>}
      {!agents.data && !agents.error && <p className="empty">Loading…</p>}
      <table>
        <tbody>
          {list.map((a) => (
            <tr key={a.name}>
              <td>{a.name}</td>
              <td>{a.effort ?? <span className="muted">agent’s model</span>}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
