import { useEffect, useState, type FormEvent } from 'react';
import { client, errorText, useApi } from '../api.js';
import { typedUsd } from '../format.js';
import { useRoute } from '../router.js';
import { parseLabelList } from '../../../src/protocol/labels.js';
import { ADMIN_ONLY, useSession } from '../session.js';
import { SchemaFields, initialValues, toInput, type FormValues, type JsonSchema } from '../components/schema-form.js';

/**
 * `os=linux,gpu=a100` → labels, by the CLI's own rule (protocol labels.ts parseLabelList: a key
 * given twice is refused, not read as its last value: fresh-tester finding, `role=build,role=x`
 * started a job no runner could take). @throws Error naming the part, prefixed `labels:`.
 */
function parseLabels(text: string): Record<string, string> {
  try {
    return parseLabelList(text);
  } catch (err) {
    throw new Error(`labels: ${(err as Error).message}`);
  }
}

/** Run job: pick an agent; its input form is generated from the agent's input schema; budget, labels, priority. */
export function RunJobPage() {
  const { isAdmin } = useSession();
  const { query, go } = useRoute();
  const agents = useApi(() => client.listAgents(), []);
  const [agentName, setAgentName] = useState(query.get('agent') ?? '');
  const agent = (agents.data ?? []).find((a) => a.name === agentName);
  const schema = (agent?.inputSchema ?? {}) as JsonSchema;
  const [values, setValues] = useState<FormValues>({});
  const [budget, setBudget] = useState('');
  const [labels, setLabels] = useState('');
  const [priority, setPriority] = useState('0');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    if (!agentName && agents.data?.[0]) setAgentName(agents.data[0].name);
  }, [agents.data, agentName]);
  useEffect(() => {
    setValues(initialValues(schema));
    setBudget(agent ? String(agent.limits.defaultBudgetUsd) : '');
  }, [agentName, agent?.name]);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError('');
    setBusy(true);
    try {
      const input = toInput(schema, values);
      // the CLI's and API's rule for dollars (no exponent: `1e2` was taken as $100, fresh-tester finding)
      const budgetUsd = budget.trim() ? typedUsd(budget) : undefined;
      if (budgetUsd === null) throw new Error('Budget, USD: a plain decimal from 0.000001 to 100000, at most 6 decimals (no sign, exponent or spaces)');
      const job = await client.createJob({
        agent: agentName,
        input,
        ...(budgetUsd !== undefined ? { budgetUsd } : {}),
        ...(labels.trim() ? { labels: parseLabels(labels) } : {}),
        priority: Number(priority) || 0,
      });
      go(`/jobs/${job.id}`);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section>
      <h1>Run job</h1>
      {/* the browser's own check blocks a submit (priority past 100) before `submit` runs: the
          error of an earlier submit goes, else it named a field already corrected (fresh tester) */}
      <form className="card form" onSubmit={submit} onInvalidCapture={() => setError('')} data-testid="run-form">
        <label>
          Agent
          <select name="agent" value={agentName} onChange={(e) => setAgentName(e.target.value)}>
            {(agents.data ?? []).map((a) => (
              <option key={a.name} value={a.name}>
                {a.name}
              </option>
            ))}
          </select>
        </label>
        {agent?.description && <p className="muted">{agent.description}</p>}
        <fieldset>
          <legend>Input</legend>
          <SchemaFields schema={schema} values={values} onChange={setValues} />
        </fieldset>
        <label>
          Budget, USD
          <input name="budget" type="text" inputMode="decimal" value={budget} onChange={(e) => setBudget(e.target.value)} />
        </label>
        <label>
          Runner labels <small className="muted">key=value, comma-separated (e.g. os=linux)</small>
          <input name="labels" value={labels} onChange={(e) => setLabels(e.target.value)} />
        </label>
        <label>
          Priority
          <input name="priority" type="number" min="-100" max="100" step="1" value={priority} onChange={(e) => setPriority(e.target.value)} />
        </label>
        {error && <p className="error" data-testid="run-error">{error}</p>}
        <button type="submit" className="primary" disabled={!isAdmin || busy || !agent} title={isAdmin ? '' : ADMIN_ONLY} data-testid="start">
          {busy ? 'Starting…' : 'Start job'}
        </button>
      </form>
    </section>
  );
}
