import { useEffect, useRef, useState } from 'react';
import { client, errorText, useApi, type JobEvent } from '../api.js';
import { int, jobDuration, usd, when } from '../format.js';
import { Link, useRoute } from '../router.js';
import { ResultBox } from '../components/result-box.js';
import { JobTreeCard } from '../components/job-tree.js';
import { ADMIN_ONLY, useSession } from '../session.js';
import { BudgetBar } from '../components/budget-bar.js';
import { JobStatusBadge } from '../components/status.js';
import { Transcript, foldEvents, type Item } from '../components/transcript.js';

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'lost']);

/** Resolves just after the browser's next frame (rAF, then a task), marking the first one drawn with rows. */
function nextFrame(): Promise<void> {
  return new Promise((r) =>
    requestAnimationFrame(() =>
      setTimeout(() => {
        if (performance.getEntriesByName('flotilla:first-row').length > 0 && performance.getEntriesByName('flotilla:first-frame').length === 0) performance.mark('flotilla:first-frame');
        r();
      }, 0),
    ),
  );
}

/** The API resumes (POST /api/jobs with resumeJobId) an ended job that recorded a harness session on a runner. */
function resumable(j: { status: string; sessionId: string | null; runnerId: number | null }): boolean {
  return TERMINAL.has(j.status) && j.sessionId !== null && j.runnerId !== null;
}

/**
 * Follows the job's events over SSE (client.followEvents: replays from the start, then live,
 * resuming with Last-Event-ID after a drop) and folds them into transcript rows, flushing at
 * most once per animation frame so a 10,000-event replay renders a few times, not 10,000.
 */
function useTranscript(jobId: number): { items: Item[]; version: number; ended: string | null; error: string } {
  const items = useRef<Item[]>([]);
  const index = useRef(new Map<string, number>());
  const [version, setVersion] = useState(0);
  const [ended, setEnded] = useState<string | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    items.current = [];
    index.current = new Map();
    setVersion((n) => n + 1);
    setEnded(null);
    const abort = new AbortController();
    let pending: JobEvent[] = [];
    let frame = 0;
    const flush = () => {
      if (items.current.length === 0) performance.mark('flotilla:first-flush');
      frame = 0;
      foldEvents(items.current, index.current, pending);
      pending = [];
      setVersion((n) => n + 1);
    };
    (async () => {
      try {
        let slice = performance.now();
        for await (const ev of client.followEvents(jobId, { signal: abort.signal, onEnd: (s) => setEnded(s) })) {
          if (items.current.length === 0 && pending.length === 0) performance.mark('flotilla:first-event');
          pending.push(ev);
          if (!frame) frame = requestAnimationFrame(flush);
          // A replay arrives faster than it parses: every ~40 ms, fold what came and let the
          // browser draw a frame (a bare setTimeout(0) lets the replay starve rendering, so the
          // rows would be in the DOM but not on screen), so the first rows show at once and the
          // page stays responsive while the rest folds in.
          if (performance.now() - slice > 40) {
            if (frame) cancelAnimationFrame(frame);
            flush();
            await nextFrame();
            slice = performance.now();
          }
        }
        if (pending.length) flush();
      } catch (e) {
        if (!abort.signal.aborted) setError(errorText(e));
      }
    })();
    return () => {
      abort.abort();
      if (frame) cancelAnimationFrame(frame);
    };
  }, [jobId]);
  return { items: items.current, version, ended, error };
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
      </h3>
      {t.error && <p className="error">{t.error}</p>}
      <Transcript items={t.items} version={t.version} />
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
            <dd>{j.runnerId ?? '—'}</dd>
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
          {j.error && <p className="error">{j.error}</p>}
        </div>
        <div className="card">
          <h3>Cost</h3>
          {budget.data ? (
            <BudgetBar spent={budget.data.budget.spentMicros} reserved={budget.data.budget.reservedMicros} limit={budget.data.budget.limitMicros} />
          ) : (
            <BudgetBar spent={usage?.costMicros ?? 0} limit={j.budgetMicros} />
          )}
          <div className="inline">
            <input type="number" min="0" step="any" aria-label="top up, USD" value={topUp} onChange={(e) => setTopUp(e.target.value)} style={{ width: '6rem' }} />
            <button disabled={!isAdmin || TERMINAL.has(j.status) || !(Number(topUp) > 0)} title={isAdmin ? 'Add dollars to this tree’s budget' : ADMIN_ONLY} onClick={() => act(() => client.topUpBudget(id, Number(topUp)))} data-testid="top-up">
              Top up
            </button>
          </div>
          <p>
            <span data-testid="job-cost">{usd(usage?.costMicros ?? 0)}</span> · {int(usage?.modelCalls ?? 0)} model calls · {int(usage?.inputTokens ?? 0)} in / {int(usage?.outputTokens ?? 0)} out tokens
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
