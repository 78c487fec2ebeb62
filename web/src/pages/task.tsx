import { useState, type FormEvent } from 'react';
import { client, errorText, useApi, type Task } from '../api.js';
import { int, typedUsd, usd, when } from '../format.js';
import { BudgetBar } from '../components/budget-bar.js';
import { RunnerName } from '../components/runner-name.js';
import { Link } from '../router.js';
import { ADMIN_ONLY, useSession } from '../session.js';
import { TaskStatusBadge } from '../components/task-status.js';
import { ConversationView } from '../components/task-conversation.js';

/** Which actions the API takes in each status (the server decides; these only enable buttons). */
function can(t: Task) {
  return {
    suspend: t.status === 'idle' || t.status === 'running',
    resume: t.status === 'suspended' || t.status === 'workspace_lost' || t.status === 'completed',
    stop: t.status === 'running',
    complete: t.status !== 'completed',
    send: t.status !== 'completed',
  };
}

/** One task: status, keys, queue; the conversation (each turn's prompts and events, then the agent's replies, its job linked; what is queued) and a box to queue a prompt; suspend, resume, stop, complete. Keyed by id so nothing carries over between tasks. */
export function TaskPage({ id }: { id: number }) {
  return <TaskView key={id} id={id} />;
}

function TaskView({ id }: { id: number }) {
  const { isAdmin } = useSession();
  // One call gives the task and its conversation (GET /api/tasks/:id/conversation).
  const detail = useApi(() => client.getTaskConversation(id), [id], 2500);
  const [prompt, setPrompt] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const [topUp, setTopUp] = useState('1');
  // The jobs the last top-up resumed from a pause for budget (POST /api/tasks/:id/budget `resumed`).
  const [resumed, setResumed] = useState<number[]>([]);
  const act = async (f: () => Promise<unknown>) => {
    setError('');
    setResumed([]);
    setBusy(true);
    try {
      await f();
      detail.reload();
      return true;
    } catch (e) {
      setError(errorText(e));
      return false;
    } finally {
      setBusy(false);
    }
  };
  const d = detail.data;
  if (!d) return detail.error ? <p className="error">{errorText(detail.error)}</p> : <p className="empty">Loading task #{id}…</p>;
  const t = d.task;
  const ok = can(t);
  const send = async (e: FormEvent) => {
    e.preventDefault();
    const text = prompt.trim();
    if (!text) return;
    if (await act(() => client.sendTaskPrompt(id, text))) {
      setPrompt('');
    }
  };
  const button = (label: string, enabled: boolean, f: () => Promise<unknown>, danger = false) => (
    <button className={danger ? 'danger' : ''} disabled={!isAdmin || !enabled || busy} title={isAdmin ? '' : ADMIN_ONLY} onClick={() => act(f)} data-testid={`task-${label.toLowerCase()}`}>
      {label}
    </button>
  );
  return (
    <section>
      <div className="bar">
        <h1>
          Task #{t.id} <span className="muted">{t.title || t.agent}</span>
        </h1>
        <TaskStatusBadge status={t.status} />
        {button('Suspend', ok.suspend, () => client.suspendTask(id))}
        {button('Resume', ok.resume, () => client.resumeTask(id))}
        {button('Stop', ok.stop, () => client.stopTask(id), true)}
        {button('Complete', ok.complete, () => client.completeTask(id), true)}
      </div>
      {error && <p className="error">{error}</p>}
      {t.error && <p className="warn">{t.error}</p>}
      {t.currentJobId && t.turnJobStatus !== 'paused' && t.turnPausedJobs > 0 && (
        <p className="warn" data-testid="task-paused">
          {t.turnPausedJobs === 1 ? 'A job' : `${t.turnPausedJobs} jobs`} that turn job #{t.currentJobId} started {t.turnPausedJobs === 1 ? 'is' : 'are'} paused for budget: {t.budgetMicros !== null ? 'add to the task’s budget below to resume them.' : <>top up <Link to={`/jobs/${t.currentJobId}`}>the turn’s tree</Link>.</>}
        </p>
      )}
      {t.currentJobId && t.turnJobStatus === 'paused' && (
        <p className="warn" data-testid="task-paused">
          Turn job #{t.currentJobId} is paused for budget: {t.budgetMicros !== null ? 'add to the task’s budget below to resume it.' : <>top it up on <Link to={`/jobs/${t.currentJobId}`}>its job page</Link>.</>}
        </p>
      )}
      <div className="job-grid">
        <div className="card">
          <dl>
            <dt>Agent</dt>
            <dd>{t.agent}</dd>
            <dt>Keys</dt>
            <dd data-testid="task-keys">{t.keys.length ? t.keys.join(', ') : '—'}</dd>
            <dt>Queue</dt>
            <dd data-testid="task-queue">
              {int(t.queuedPrompts)} prompts, {int(t.pendingEvents)} events
              {t.trailingWakeAt && <span className="muted"> · wakes {when(t.trailingWakeAt)}</span>}
              {t.status === 'completed' && t.queuedPrompts + t.pendingEvents > 0 && <span className="muted"> · not delivered: the task is completed (its next turn gets them if it is reopened)</span>}
            </dd>
            <dt>Turns</dt>
            <dd>{int(t.turns)}</dd>
            <dt>Job</dt>
            <dd data-testid="task-job">{t.currentJobId ? <Link to={`/jobs/${t.currentJobId}`}>#{t.currentJobId} ({t.turnJobStatus ?? 'running'})</Link> : t.workspaceJobId ? <Link to={`/jobs/${t.workspaceJobId}`}>workspace of #{t.workspaceJobId}</Link> : '—'}</dd>
            <dt>Runner</dt>
            <dd>
              <RunnerName id={t.runnerId} />
            </dd>
            <dt>Coalescing</dt>
            <dd>{t.coalesceSeconds} s</dd>
          </dl>
        </div>
        <div className="card" data-testid="task-budget">
          <h3>Budget of all its turns</h3>
          {t.budgetMicros !== null ? (
            <>
              <BudgetBar spent={t.spentMicros} reserved={t.reservedMicros} limit={t.budgetMicros} />
              <p className="muted" data-testid="task-budget-left">
                {usd(Math.max(0, t.budgetMicros - t.spentMicros - t.reservedMicros))} left for its turns
              </p>
              <div className="inline">
                <input type="text" inputMode="decimal" aria-label="add to the task's budget, USD" value={topUp} onChange={(e) => setTopUp(e.target.value)} style={{ width: '6rem' }} />
                <button disabled={!isAdmin || busy || typedUsd(topUp) === null} title={isAdmin ? 'Add dollars to the task’s budget (its running turn gets them too)' : ADMIN_ONLY} onClick={() => act(async () => setResumed((await client.setTaskBudget(id, { addUsd: typedUsd(topUp)! })).resumed))} data-testid="task-top-up">
                  Add to budget
                </button>
              </div>
              {resumed.length > 0 && (
                <p className="muted" data-testid="task-resumed">
                  Resumed {resumed.map((j, i) => (
                    <span key={j}>
                      {i > 0 && ', '}
                      <Link to={`/jobs/${j}`}>#{j}</Link>
                    </span>
                  ))}
                </p>
              )}
            </>
          ) : (
            <p className="muted">
              None of its own: each turn gets its agent’s default budget. Its turns have spent <span data-testid="task-spent">{usd(t.spentMicros)}</span>.
            </p>
          )}
        </div>
      </div>
      <div className="card" data-testid="conversation">
        <h3>Conversation</h3>
        <ConversationView conv={d} />
        <form className="inline" onSubmit={send}>
          <textarea value={prompt} onChange={(e) => setPrompt(e.target.value)} placeholder={isAdmin ? 'Queue a prompt for the next turn' : ADMIN_ONLY} disabled={!isAdmin || !ok.send} aria-label="prompt" rows={3} data-testid="task-prompt" />
          <button type="submit" className="primary" disabled={!isAdmin || !ok.send || busy || !prompt.trim()} data-testid="task-send">
            Queue prompt
          </button>
        </form>
      </div>
    </section>
  );
}
