import type { FlotillaClient } from '../client/index.js';
import type { Job, JobEvent } from '../protocol/index.js';
import { TERMINAL_STATUSES, withoutTopUpHint } from '../protocol/index.js';
import { EventFormatter, elapsed, formatJobSummary, waitText } from './format.js';
import type { CliIO } from './io.js';
import { TreeFollower } from './follow-tree.js';
import { formatTreeTables } from './tree-format.js';

/** Options of {@link followJob}. */
export interface FollowJobOptions {
  /** Print every event as one JSON line, then `{"job": <Job>}`, instead of the human lines. */
  json: boolean;
  io: CliIO;
  /** Aborting it stops following (Ctrl-C); the result then says `interrupted`. */
  signal?: AbortSignal;
  /** Silence before the spinner (TTY) shows, ms. Default 1000. */
  spinnerAfterMs?: number;
  /** Silence between `… still` lines (not a TTY), ms. Default 5000. */
  stillEveryMs?: number;
  /** Clock, epoch ms (tests). */
  now?: () => number;
  /**
   * Stop following when the job — or another job of its tree (a child it started) — pauses on
   * the tree's budget (`run --local`: its server stops with the command, so nobody could top
   * either up); the result then says `paused`. Children are checked once a second (the budget
   * view's `pausedJobs`).
   */
  stopWhenPaused?: boolean;
  /** How often `stopWhenPaused` checks the tree's other jobs, ms (default 1000). */
  treePausePollMs?: number;
  /**
   * The caller cancels the job when `signal` aborts (`flotilla run`): when the job pauses on its
   * budget (and `stopWhenPaused` is off), say once on stderr that a top-up from elsewhere
   * resumes it and Ctrl-C here cancels it. Not with `json`.
   */
  cancelsOnInterrupt?: boolean;
}

/** What {@link followJob} ends with: the job as the server last reported it (with usage). */
export interface FollowJobResult {
  job: Job;
  interrupted: boolean;
  /** Following stopped because the job paused on its budget (only with `stopWhenPaused`). */
  paused?: boolean;
  /** With `paused`: the job of the tree that paused when it is not the one followed (a child). */
  pausedJobId?: number;
}

/** What the wait line says while the job is paused for budget. */
const PAUSED_WAIT = 'paused for budget (a top-up resumes it)';

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/**
 * Follows `job` to its end and prints it: one line per tool call, tool result and progress
 * step (format.ts), the last assistant message, then the cost table (from `GET /api/jobs/:id`)
 * with the failure reason when it did not succeed. Never silent for more than a second while
 * the job waits: on a TTY a one-line spinner with the elapsed time on stderr; otherwise a
 * `test-fixer … still <what> (Ns)` line on stderr at most every 5 s.
 * With `json`, prints each event as a JSON line on stdout and finally `{"job": <Job>}`.
 * @throws ApiError when the server cannot be reached or refuses.
 */
export async function followJob(client: FlotillaClient, job: Job, opts: FollowJobOptions): Promise<FollowJobResult> {
  const { io, json } = opts;
  const now = opts.now ?? Date.now;
  const fmt = new EventFormatter(job.agent);
  const spinnerAfter = opts.spinnerAfterMs ?? 1000;
  const stillEvery = opts.stillEveryMs ?? 5000;
  const tty = io.stderr.isTTY === true;

  let what = job.status === 'queued' ? 'waiting for a runner' : 'working';
  let whatSince = now();
  let lastOutput = now();
  let lastStill = 0;
  let spinnerShown = false;
  let frame = 0;

  const clearSpinner = () => {
    if (spinnerShown) {
      io.stderr.write('\r\x1b[K');
      spinnerShown = false;
    }
  };
  const print = (line: string) => {
    clearSpinner();
    io.stdout.write(line + '\n');
    lastOutput = now();
  };
  const setWhat = (text: string) => {
    if (text !== what) {
      what = text;
      whatSince = now();
    }
  };

  const timer = json
    ? null
    : setInterval(
        () => {
          const t = now();
          if (t - lastOutput < spinnerAfter) return;
          if (tty) {
            io.stderr.write(`\r\x1b[K${SPINNER[frame++ % SPINNER.length]} ${job.agent} … ${what} (${elapsed(whatSince, t)})`);
            spinnerShown = true;
          } else if (t - lastOutput >= stillEvery && t - lastStill >= stillEvery && t - whatSince >= spinnerAfter) {
            io.stderr.write(`${job.agent} … still ${what} (${elapsed(whatSince, t)})\n`);
            lastStill = t;
          }
        },
        tty ? 100 : 250,
      );
  timer?.unref();

  let interrupted = false;
  let finished: JobEvent | null = null;
  // While paused, tool and message events (a harness reporting the refused call) must not turn
  // the waiting line back into "working": only a status change ends the pause.
  let paused = false;
  let stoppedPaused = false;
  // Attached to a server that outlives the command: a top-up from elsewhere resumes the job, but
  // Ctrl-C here cancels it (run-job.ts); say both once per pause, on stderr.
  const onPaused = () => {
    if (json || opts.stopWhenPaused || !opts.cancelsOnInterrupt) return;
    clearSpinner();
    io.stderr.write(`flotilla: job ${job.id} is paused for budget: \`flotilla budget ${job.id} --add USD\` from another shell resumes it; Ctrl-C here cancels it (run with --detach to leave jobs running)\n`);
  };
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  if (opts.signal?.aborted) stop.abort();
  // Children the job starts (issue 6): their tool lines, prefixed by their agent (follow-tree.ts).
  const children = json ? null : new TreeFollower(client, print, opts.signal, !opts.stopWhenPaused);
  // run --local: a child paused for budget waits for a top-up nobody can give (its root only
  // waits for it: tester finding, the command printed "still ..." until the root's timeout)
  let pausedJobId: number | undefined;
  const treeWatch = opts.stopWhenPaused
    ? setInterval(() => {
        void client
          .getBudget(job.id)
          .then((v) => {
            if (!v.pausedJobs.length || stop.signal.aborted) return;
            pausedJobId = v.pausedJobs[0];
            stoppedPaused = true;
            stop.abort();
          })
          .catch(() => undefined);
      }, opts.treePausePollMs ?? 1000)
    : null;
  treeWatch?.unref();
  try {
    // while the stream is lost, the wait line says so (not "still working" through a server outage)
    let before: string | null = null;
    const onTrouble = (problem: string | null) => {
      if (problem !== null) {
        before ??= what;
        setWhat(`the server cannot be reached (${problem}); trying again`);
      } else if (before !== null) {
        setWhat(before);
        before = null;
      }
    };
    for await (const ev of client.followEvents(job.id, { signal: stop.signal, onTrouble })) {
      if (ev.type === 'status') {
        const wasPaused = paused;
        paused = ev.data.status === 'paused';
        if (paused && !wasPaused) onPaused();
      }
      // --json too: it used to `continue` before this check and so never stopped on a pause (run --local hung).
      if (json) {
        io.stdout.write(JSON.stringify(ev) + '\n');
        if (paused && opts.stopWhenPaused) {
          stoppedPaused = true;
          break;
        }
        continue;
      }
      const line = fmt.line(ev);
      // --local: its server ends with the command, so the pause's "Top up with: ..." cannot be followed
      if (line) print(paused && opts.stopWhenPaused ? withoutTopUpHint(line) : line);
      children?.onEvent(ev);
      const w = waitText(ev);
      // while paused, the wait line says so in its own words: a status message of the pause
      // ("attempt 1 stopped for the pause …; still paused ...") read as "… still attempt 1 ended ..." (tester finding)
      if (w) setWhat(paused ? PAUSED_WAIT : w);
      else if (!paused && (ev.type === 'harness.started' || ev.type === 'tool.result' || ev.type === 'tool.call' || ev.type === 'message')) setWhat('working');
      if (ev.type === 'job.finished') finished = ev;
      if (paused && opts.stopWhenPaused) {
        stoppedPaused = true;
        break;
      }
    }
    interrupted = opts.signal?.aborted === true;
  } finally {
    opts.signal?.removeEventListener('abort', onAbort);
    if (timer) clearInterval(timer);
    if (treeWatch) clearInterval(treeWatch);
    clearSpinner();
    await children?.stop();
  }

  let final = await client.getJob(job.id);
  // The stream can end (runner's job.finished) a moment before the job row says so.
  for (let i = 0; !interrupted && finished && !TERMINAL_STATUSES.includes(final.status) && i < 20; i++) {
    await new Promise((r) => setTimeout(r, 100));
    final = await client.getJob(job.id);
  }
  if (json) {
    io.stdout.write(JSON.stringify({ job: final }) + '\n');
  } else if (!interrupted && !stoppedPaused) {
    const last = fmt.finalLine();
    if (last) print(last);
    print('');
    // A job that started children ends with the tree's tables (per job, per agent with counts).
    print(children && children.followed > 0 ? formatTreeTables(await client.getJobTree(job.id)) : formatJobSummary(final));
  }
  return { job: final, interrupted, ...(stoppedPaused ? { paused: true } : {}), ...(pausedJobId !== undefined ? { pausedJobId } : {}) };
}
