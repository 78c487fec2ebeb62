import { useEffect, useState } from 'react';
import { client, errorText, useApi } from '../api.js';
import { int, jobDuration, localTimesIn, typedUsd, usd, when } from '../format.js';
import { Link, useRoute } from '../router.js';
import { ResultBox } from '../components/result-box.js';
import { JobTreeCard } from '../components/job-tree.js';
import { ADMIN_ONLY, useSession } from '../session.js';
import { BudgetBar } from '../components/budget-bar.js';
import { JobStatusBadge } from '../components/status.js';
import { Transcript } from '../components/transcript.js';
import { useTranscript } from '../components/use-transcript.js';
import { queuedLapse, resumeNeedsText, topUpText } from '../budget-words.js';
import { RunnerName } from '../components/runner-name.js';

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'lost']);
/** What the top-up box takes (format.ts typedUsd: the CLI's `--add` rule). */
const TOP_UP_RULE = 'an amount in US dollars from 0.000001 to 100000, such as 1 or 0.5: digits and an optional fraction of at most 6 places (no sign, exponent or spaces)';

/** The API resumes (POST /api/jobs with resumeJobId) an ended job that recorded a harness session on a runner. */
function resumable(j: { status: string; sessionId: string | null; runnerId: number | null }): boolean {
  return TERMINAL.has(j.status) && j.sessionId !== null && j.runnerId !== null;
}

/** One job: status, budget bar (Top up), Cancel, Resume, the result, and the live transcript. Keyed by id so no state carries over between jobs. */
export function JobPage({ id }: { id: number }) {
  return <JobView key={id} id={id} />;
}

function JobView({ id }: { id: number }) {
  const { isAdmin } = useSession();
  const t = useTranscript(id);
  const [done, setDone] = useState(false);
  const job = useApi(() => client.getJob(id), [id, t.ended], done ? 0 : 1500);
  // The tree's budget (issue 3's API): spent, reserved, limit. Falls back to this job's usage.
  const budget = useApi(() => client.getBudget(id), [id, t.ended], done ? 0 : 1500);
  const [topUp, setTopUp] = useState('1');
  // what the last top-up did (resumed jobs, or the job still paused: resume-needs says for what)
  const [topUpNote, setTopUpNote] = useState('');
  const j = job.data;
  useEffect(() => {
    if (j && TERMINAL.has(j.status)) setDone(true);
  }, [j]);
  const [cancelError, setCancelError] = useState('');
  const act = async (f: () => Promise<unknown>) => {
    setCancelError('');
    try {
      await f();
      job.reload();
      budget.reload();
    } catch (e) {
      setCancelError(errorText(e));
    }
  };
  const cancel = () => act(() => client.cancelJob(id));
  const { go } = useRoute();
  const resume = () =>
    act(async () => {
      const next = await client.createJob({ agent: j!.agent, input: {}, resumeJobId: id });
      go(`/jobs/${next.id}`);
    });
  const children = t.items.flatMap((it) => (it.kind === 'event' && it.ev.type === 'child.started' ? [it.ev.data] : []));
  const transcript = (
    <>
      <h3>
        Transcript <span className="muted">{t.items.length} rows</span>
        {t.olderCount > 0 && <span className="muted"> · {t.olderCount} older events</span>}
      </h3>
      {t.error && <p className="error">{t.error}</p>}
      <Transcript items={t.items} version={t.version} olderCount={t.olderCount} loadingOlder={t.loadingOlder} loadOlder={t.loadOlder} />
    </>
  );
  if (!j)
    return (
      <section className="job">
        {job.error ? <p className="error">{job.error.message}</p> : <p className="empty">Loading job #{id}…</p>}
        {!job.error && transcript}
      </section>
    );
  const usage = j.usage;
  // why Top up is off, as its title says (no title but the action's when it is on)
  const topUpBlocked = !isAdmin ? ADMIN_ONLY : TERMINAL.has(j.status) ? `job ${j.id} is ${j.status}: no top-up resumes an ended job` : typedUsd(topUp) === null ? TOP_UP_RULE : null;
  return (
    <section className="job">
      <div className="bar">
        <h1>
          Job #{j.id} <span className="muted">{j.agent}</span>
        </h1>
        <JobStatusBadge status={j.status} />
        <button className="danger" disabled={!isAdmin || TERMINAL.has(j.status)} title={isAdmin ? 'Cancel this job' : ADMIN_ONLY} onClick={cancel} data-testid="cancel">
          Cancel
        </button>
        <button
          disabled={!isAdmin || !resumable(j)}
          title={!isAdmin ? ADMIN_ONLY : resumable(j) ? 'Start a new job that continues this job’s session, on the same runner and workspace' : 'Only an ended job that recorded a session can be resumed'}
          onClick={resume}
          data-testid="resume-job"
        >
          Resume
        </button>
      </div>
      {cancelError && <p className="error">{cancelError}</p>}
      <div className="job-grid">
        <div className="card">
          <dl>
            <dt>Runner</dt>
            <dd>
              <RunnerName id={j.runnerId} />
            </dd>
            {j.status === 'queued' && j.waiting && (
              <>
                {/* why a queued job still waits (the API's note: no runner matches, every one held or busy, its session's runner offline), as `flotilla jobs show` says */}
                <dt>Waiting</dt>
                <dd data-testid="job-waiting">{localTimesIn(j.waiting)}</dd>
              </>
            )}
            <dt>Created</dt>
            <dd>{when(j.createdAt)}</dd>
            <dt>Started</dt>
            <dd>{when(j.startedAt)}</dd>
            <dt>Duration</dt>
            <dd>{jobDuration(j)}</dd>
            <dt>Tree</dt>
            <dd>{j.rootId === j.id ? 'root' : <Link to={`/jobs/${j.rootId}`}>root #{j.rootId}</Link>}</dd>
            {j.parentId !== null && (
              <>
                <dt>Parent</dt>
                <dd>
                  <Link to={`/jobs/${j.parentId}`}>#{j.parentId}</Link>
                </dd>
              </>
            )}
            {j.endReason && (
              <>
                <dt>Reason</dt>
                <dd>{j.endReason}</dd>
              </>
            )}
          </dl>
          {j.error && (
            <p className="error">
              {j.status === 'paused' ? 'When it paused: ' : ''}
              {j.error}
            </p>
          )}
        </div>
        <div className="card">
          <h3>Cost</h3>
          {budget.data ? (
            <BudgetBar
              spent={budget.data.budget.spentMicros}
              reserved={budget.data.budget.reservedMicros}
              held={budget.data.budget.heldMicros ?? 0}
              ownHeld={budget.data.ownHeldMicros ?? 0}
              left={budget.data.budget.remainingMicros}
              limit={budget.data.budget.limitMicros}
              {...(budget.data.budget.boundedBy
                ? {
                    bound: {
                      left: budget.data.budget.remainingMicros,
                      by: budget.data.budget.boundedBy.jobId === undefined ? `job tree ${budget.data.budget.rootId}` : `job ${budget.data.budget.boundedBy.jobId}’s sub-limit`,
                      byLimit: budget.data.budget.boundedBy.limitMicros,
                    },
                  }
                : {})}
            />
          ) : (
            <BudgetBar spent={usage?.costMicros ?? 0} limit={j.budgetMicros} />
          )}
          {j.status === 'paused' && j.endReason === 'budget' && budget.data && (
            <p className="warn" data-testid="resume-needs">
              {resumeNeedsText(budget.data)}
            </p>
          )}
          {topUpNote && <p data-testid="top-up-note">{topUpNote}</p>}
          {budget.data?.holders && budget.data.holders.length > 0 && (
            <p data-testid="budget-holders">
              Held for resumed jobs, each until it makes its call or ends{queuedLapse(budget.data.holders.filter((h) => h.jobId !== j.id))}:{' '}
              {budget.data.holders.map((h, i) => (
                <span key={h.jobId}>
                  {i > 0 && ', '}
                  <Link to={`/jobs/${h.jobId}`}>#{h.jobId}</Link> {usd(h.heldMicros)} ({h.jobId === j.id ? 'this job: its own calls may use it' : h.status})
                </span>
              ))}
            </p>
          )}
          {budget.data && budget.data.pausedJobs.length > 0 && (
            <p className="warn" data-testid="paused-in-tree">
              Paused for budget in this tree:{' '}
              {budget.data.pausedJobs.map((p, i) => (
                <span key={p}>
                  {i > 0 && ', '}
                  <Link to={`/jobs/${p}`}>#{p}</Link>
                </span>
              ))}
            </p>
          )}
          <div className="inline">
            <input type="text" inputMode="decimal" aria-label="top up, USD" value={topUp} onChange={(e) => setTopUp(e.target.value)} style={{ width: '6rem' }} />
            <button disabled={topUpBlocked !== null} title={topUpBlocked ?? (budget.data?.budget.jobId !== undefined ? `Add dollars to job ${budget.data.budget.jobId}’s sub-limit (the budget this job uses)` : 'Add dollars to this tree’s budget')} onClick={() => act(async () => setTopUpNote(topUpText(await client.topUpBudget(id, typedUsd(topUp)!), typedUsd(topUp)!)))} data-testid="top-up">
              Top up
            </button>
            {/* why the button is off, said where the amount is typed (it was disabled without a word: tester finding) */}
            {isAdmin && !TERMINAL.has(j.status) && topUp.trim() !== '' && typedUsd(topUp) === null && (
              <span className="warn" data-testid="top-up-problem">
                {TOP_UP_RULE}
              </span>
            )}
          </div>
          <p>
            <span data-testid="job-cost">{usd(usage?.costMicros ?? 0)}</span> · {int(usage?.modelCalls ?? 0)} model calls · {int(usage?.inputTokens ?? 0)} in / {int(usage?.outputTokens ?? 0)} out tokens
            {/* the cache tokens are most of a harness's input and cost (a fresh tester found them left out) */}
            {usage && usage.cacheReadTokens + usage.cacheWriteTokens > 0 && (
              <span data-testid="job-cache-tokens">
                {' '}
                ({int(usage.cacheReadTokens)} cache read, {int(usage.cacheWriteTokens)} cache write)
              </span>
            )}
            {usage && usage.estimatedCalls > 0 && <span className="warn"> · {usage.estimatedCalls} estimated</span>}
          </p>
          {children.length > 0 && (
            <p>
              Children:{' '}
              {children.map((c) => (
                <Link key={c.jobId} to={`/jobs/${c.jobId}`}>
                  #{c.jobId} {c.agent}{' '}
                </Link>
              ))}
            </p>
          )}
        </div>
        {j.result && <ResultBox result={j.result} />}
      </div>
      <JobTreeCard rootId={j.rootId} jobId={j.id} live={!done} />
      {transcript}
    </section>
  );
}
