import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { EventBody, JobAssignment, JobResult } from '../protocol/index.js';
import { ATTEMPT_GIVEN_UP } from '../protocol/index.js';
import type { Logger } from '../core/log.js';
import { renderTemplate } from '../core/template.js';
import { PARSER_TICK_MS, type Harness, type HarnessContext, type HarnessOutcome } from './harness/types.js';
import { LineSplitter } from './lines.js';
import { IdleWatch } from './idle.js';
import { forgetGroup, recordGroup } from './orphans.js';
import type { JobWatchdog } from './watchdog.js';
import { spawnGroup, type GroupProcess } from './process.js';
import { killJobProcesses, RUN_MARKER_VAR } from './proc-tree.js';
import { OutputHold } from './output-hold.js';
import { readOnlyCommand, verifyReadOnly } from './readonly.js';
import { hideSecretsCommand } from './secret-mask.js';
import { collectChanges, prepareWorkspace, reuseWorkspace, WorkspaceError, type Workspace } from './workspace.js';

/** What a {@link JobRun} needs from its runner. */
export interface JobRunDeps {
  /** Runner work folder (workspaces/, homes/). */
  workDir: string;
  repoBaseDir: string;
  /** The runner's secret folder, hidden from the harness (secret-mask.ts); absent: not hidden. */
  secretDir?: string;
  /** More files and folders hidden from the harness with `secretDir` (RunnerOptions.hidePaths). */
  hidePaths?: readonly string[];
  serverUrl: string;
  /** SIGTERM → SIGKILL grace, ms. */
  graceMs: number;
  /** How long a budget pause lets the harness exit on its own before stopping it (JobRun.pause), ms; default 2000. */
  pauseSettleMs?: number;
  /** Harness adapters by name (`claude-code`, ...). */
  harnesses: Readonly<Record<string, Harness>>;
  /** Executable override per harness name (e.g. `claude-code` → a test script). */
  executables?: Readonly<Record<string, string>>;
  /**
   * Asks the control plane for fresh model-call activity (a heartbeat out of turn), resolving
   * once the reply was applied through {@link JobRun.modelActivity} or after a bounded wait.
   * Used before an idle job is ended. Absent: output alone decides.
   */
  refreshActivity?: () => Promise<void>;
  /** Told of the harness's process group while it runs, to stop it if the runner cannot (watchdog.ts). */
  watchdog?: Pick<JobWatchdog, 'watch' | 'unwatch'>;
  /** Receives the attempt's events in order (the runner numbers and uploads them). */
  emit: (event: EventBody) => void;
  /**
   * Events emitted and not yet stored by the server (the outbox's unacknowledged): past
   * OUTPUT_HIGH_WATER (output-hold.ts) the harness's output pipes are paused until it is back under
   * OUTPUT_LOW_WATER (the harness then blocks on its writes, as on a full pipe). Absent: never paused.
   */
  backlog?: () => number;
  log: Logger;
}

type JobFinished = Extract<EventBody, { type: 'job.finished' }>['data'];

/** Longest wait for a job's output pipes to close after its process group is gone, ms. */
const PIPE_CLOSE_TIMEOUT_MS = 5000;

/**
 * One job attempt, from assignment to `job.finished`: progress events, workspace, harness
 * process (its events streamed through `emit`), and the result (summary, branch, commit if
 * HEAD moved, changed files incl. uncommitted ones). `job.finished` is always the last event,
 * emitted exactly once, and only after every process of the attempt is gone (its process
 * group, and any process carrying its `FLOTILLA_RUN` marker or descending from one).
 *
 * Limits, enforced here whatever the harness does (issue 4), each hit = the end reason:
 * - wall clock: agent.limits.timeoutSeconds → failed `timeout`;
 * - idle: no stdout/stderr output AND no model call for agent.limits.idleSeconds → failed
 *   `blocked_on_input` (model calls as the control plane reports them, {@link IdleWatch});
 * - turns: more model turns than agent.limits.maxTurns → failed `max_turns`, counted by the
 *   harness's `turnEvent` (`usage`, one per model call; Codex: `tool.call`);
 * - read-only (agent.readOnly): the workspace is mounted read-only for the harness, verified by
 *   a write probe first; cannot enforce → failed `read_only_unavailable`;
 * - cancel → `cancelled`.
 * Given up ({@link lose}: the runner's lease on its jobs ran out, or the runner is stopping):
 * the processes are killed and the attempt ends WITHOUT `job.finished` — its last event is a
 * `progress` (phase `lost`) — so the control plane ends it as it ends a lost runner's job
 * (retried when the agent has retries left, else `lost`).
 * Sessions: with `resumeSessionId` the attempt continues in the workspace and HOME of
 * `workspaceJobId` (default its own job) and the harness must report that same session id;
 * a missing workspace, "no conversation found" or another session id → failed `resume_failed`.
 */
export class JobRun {
  readonly jobId: number;
  readonly attempt: number;
  private proc: GroupProcess | null = null;
  private idle: IdleWatch | null = null;
  private stopped: JobFinished | null = null;
  private readonly abort = new AbortController();
  private finished = false;
  private pauseTimer: NodeJS.Timeout | null = null;
  /** The gateway's budget refusal when the agent fails on it ({@link failForBudget}); null otherwise. */
  private budgetFailure: string | null = null;
  /** SIGTERM → SIGKILL grace for this attempt's processes, ms: the runner's, or shorter once given up. */
  private killGraceMs: number;
  /** Why the attempt was given up ({@link lose}); null while it was not. */
  private lostReason: string | null = null;
  /** The harness exited on its own: its outcome stands even if the attempt is given up later. */
  private harnessExited = false;
  private readonly log: Logger;
  /** Environment marker of this attempt's processes (`FLOTILLA_RUN` value). */
  private readonly marker: string;

  constructor(
    readonly assignment: JobAssignment,
    private readonly deps: JobRunDeps,
  ) {
    this.jobId = assignment.jobId;
    this.attempt = assignment.attempt;
    this.log = deps.log.child({ jobId: this.jobId, attempt: this.attempt });
    this.marker = `${this.jobId}.${this.attempt}.${randomBytes(6).toString('hex')}`;
    this.killGraceMs = deps.graceMs;
  }

  /** True until the attempt ended (`job.finished` emitted, or given up: {@link lose}) and its processes are gone. */
  get active(): boolean {
    return !this.finished;
  }

  /** True once the attempt was given up ({@link lose}): it ends without `job.finished`. */
  get lost(): boolean {
    return this.lostReason !== null;
  }

  /**
   * A `job.activity` report from the control plane for this attempt: `inFlight` model calls
   * now, the last one started or ended `idleMs` ago. Restarts the idle clock accordingly.
   */
  modelActivity(inFlight: number, idleMs: number): void {
    this.idle?.model(inFlight, idleMs);
  }

  /** Process group id of the running harness, if one is running. */
  get pgid(): number | null {
    return this.proc && this.proc.pid > 0 ? this.proc.pid : null;
  }

  /**
   * Stops the attempt: kills the harness's process group (SIGTERM, grace, SIGKILL) or aborts
   * the workspace preparation; the attempt finishes `cancelled` with `reason` as its error.
   */
  cancel(reason: string): void {
    this.stop({ status: 'cancelled', reason: 'cancelled', error: reason });
  }

  /**
   * Stops the attempt for a budget pause (server `job.cancel` with `pause`): the gateway has just
   * refused the harness a model call, which well-behaved harnesses answer by exiting on their
   * own, so they get `pauseSettleMs` to do so (their own outcome, e.g. failed `budget`, is then
   * reported); a harness still running after it is stopped as by {@link cancel} (SIGTERM, grace,
   * SIGKILL of the process group) and finishes `cancelled` with `reason`. The workspace and HOME
   * (the session) are kept, as after any attempt. Repeats are no-ops.
   */
  pause(reason: string): void {
    if (this.finished || this.stopped || this.pauseTimer) return;
    this.log.info('budget pause: stopping the attempt unless the harness exits first', { settleMs: this.deps.pauseSettleMs ?? 2000 });
    this.pauseTimer = setTimeout(() => this.cancel(reason), this.deps.pauseSettleMs ?? 2000);
  }

  /**
   * Ends the attempt `failed`, reason `budget`, with `reason` (the gateway's refusal) as its
   * error, for an agent with `onBudgetExhausted: fail` (server `job.cancel` with `fail`): as
   * {@link pause}, the harness first gets `pauseSettleMs` to exit on its own, then it is stopped
   * (SIGTERM, grace, SIGKILL of the process group). Whatever the harness's own outcome (a
   * command that exits 1, or 0 after the refusal, or is killed), the attempt ends failed
   * `budget`; only an attempt that had finished before this arrived keeps its outcome (it is a
   * no-op then). Repeats are no-ops.
   */
  failForBudget(reason: string): void {
    if (this.finished || this.stopped || this.budgetFailure !== null) return;
    this.budgetFailure = reason;
    if (this.pauseTimer) clearTimeout(this.pauseTimer);
    this.log.info('budget exhausted (agent fails on it): stopping the attempt unless the harness exits first', { settleMs: this.deps.pauseSettleMs ?? 2000 });
    this.pauseTimer = setTimeout(() => this.stop({ status: 'failed', reason: 'budget', error: reason }), this.deps.pauseSettleMs ?? 2000);
  }

  /**
   * Gives the attempt up because this runner can no longer hold it (its lease with the control
   * plane ran out, or it is stopping): aborts the workspace preparation or kills the harness's
   * process group with a grace of at most `graceMs` (ms; 0: SIGKILL at once; a kill already
   * under way is shortened to it), and the attempt ends without `job.finished`: its last event
   * is `progress` (phase `lost`, `reason` as its message), so the control plane ends the job as
   * for a lost runner (a retry when the agent has retries left, else `lost`). An attempt whose
   * end was already decided (cancel, timeout, limit, or its harness exited on its own) keeps that
   * outcome and only gets the shorter grace. Repeats only shorten the grace.
   */
  lose(reason: string, graceMs: number): void {
    if (this.finished) return;
    this.killGraceMs = Math.min(this.killGraceMs, Math.max(0, Math.round(graceMs)));
    if (this.pauseTimer) clearTimeout(this.pauseTimer);
    this.pauseTimer = null;
    if (this.lostReason === null && !this.stopped && !this.harnessExited) {
      this.lostReason = reason;
      this.stopped = { status: 'cancelled', reason: 'lost', error: reason };
      this.log.info('giving the job attempt up', { reason, killGraceMs: this.killGraceMs });
    }
    this.abort.abort();
    if (this.proc) void this.proc.kill(this.killGraceMs);
  }

  /** Runs the attempt to its end. Never throws: every failure becomes `job.finished` failed. */
  async run(): Promise<void> {
    const { agent } = this.assignment;
    const timeoutMs = agent.limits.timeoutSeconds * 1000;
    const timer = setTimeout(() => {
      this.stop({ status: 'failed', reason: 'timeout', error: `timed out after ${agent.limits.timeoutSeconds} s (agent limits.timeoutSeconds)` });
    }, timeoutMs);
    let ws: Workspace | null = null;
    let outcome: HarnessOutcome | null = null;
    try {
      const harness = this.deps.harnesses[agent.harness];
      if (!harness) throw new FinishError('harness_unsupported', `harness ${agent.harness} is not supported by this runner`);
      const input = this.assignment.input;
      const repo = input.repo;
      if (repo !== undefined && typeof repo !== 'string') throw new FinishError('workspace', 'input.repo must be a string (a git URL or a path)');
      const ref = input.ref;
      if (ref !== undefined && typeof ref !== 'string') throw new FinishError('workspace', 'input.ref must be a string');

      const resuming = this.assignment.resumeSessionId !== null || (this.assignment.workspaceJobId ?? null) !== null;
      if (resuming) {
        const from = this.assignment.workspaceJobId ?? this.jobId;
        this.progress('workspace', `reusing the workspace of job ${from}`);
        try {
          ws = await reuseWorkspace(this.deps.workDir, from);
        } catch (err) {
          throw new FinishError('resume_failed', `resume failed: ${(err as Error).message}`);
        }
      } else ws = await prepareWorkspace({
        jobId: this.jobId,
        repo,
        ref,
        workDir: this.deps.workDir,
        repoBaseDir: this.deps.repoBaseDir,
        signal: this.abort.signal,
        onProgress: (m) => this.progress('workspace', `preparing workspace: ${m}`),
      });
      if (this.stopped) throw new StoppedError();
      outcome = await this.runHarness(harness, ws);
    } catch (err) {
      if (!(err instanceof StoppedError) && !this.stopped) {
        if (err instanceof FinishError) outcome = { status: 'failed', reason: err.reason, error: err.message };
        else if (err instanceof WorkspaceError) outcome = { status: 'failed', reason: 'workspace', error: err.message };
        else {
          this.log.error('job attempt failed unexpectedly', { error: (err as Error).message });
          outcome = { status: 'failed', reason: 'error', error: `runner error: ${(err as Error).message}` };
        }
      }
    } finally {
      clearTimeout(timer);
    }
    this.finish(outcome, ws ? await this.collect(ws, outcome?.summary) : undefined);
  }

  private async runHarness(harness: Harness, ws: Workspace): Promise<HarnessOutcome> {
    const a = this.assignment;
    const home = join(this.deps.workDir, 'homes', `job-${a.workspaceJobId ?? this.jobId}`);
    // A fresh HOME unless the attempt goes on where one stopped: a session resumed, or the job's
    // own workspace again (a budget resume of a harness that reports no session).
    if (!a.resumeSessionId && a.workspaceJobId !== this.jobId) await rm(home, { recursive: true, force: true });
    await mkdir(home, { recursive: true });
    const limits = a.agent.limits;
    const prompt = renderTemplate(a.agent.promptText, { input: a.input, job: { id: this.jobId, rootId: a.rootId, attempt: this.attempt, branch: ws.branch } });
    const ctx: HarnessContext = {
      jobId: this.jobId,
      rootId: a.rootId,
      attempt: this.attempt,
      agent: a.agent,
      input: a.input,
      prompt,
      token: a.token,
      serverUrl: this.deps.serverUrl,
      workspace: ws.dir,
      branch: ws.branch,
      home,
      resumeSessionId: a.resumeSessionId,
      executable: this.deps.executables?.[harness.name],
      ...(a.effort ? { model: a.effort.model, effort: a.effort.level } : {}),
    };
    let cmd;
    try {
      await harness.prepare?.(ctx);
      cmd = harness.command(ctx);
    } catch (err) {
      throw new FinishError('harness_start', (err as Error).message);
    }
    cmd = { ...cmd, env: { ...cmd.env, [RUN_MARKER_VAR]: this.marker } };
    if (this.deps.secretDir) cmd = hideSecretsCommand(cmd, this.deps.secretDir, this.deps.hidePaths);
    if (a.agent.readOnly) {
      this.progress('harness', 'mounting the workspace read-only and verifying it by a test write');
      try {
        await verifyReadOnly(ws.dir, cmd.env);
      } catch (err) {
        throw new FinishError('read_only_unavailable', (err as Error).message);
      }
      cmd = readOnlyCommand(cmd, ws.dir);
    }
    if (this.stopped) throw new StoppedError();
    this.progress('harness', `starting ${harness.name}`);
    const proc = spawnGroup(cmd.file, cmd.args, { cwd: cmd.cwd, env: cmd.env, ...(cmd.stdin !== undefined ? { stdin: cmd.stdin } : {}) });
    this.proc = proc;
    if (this.stopped) void proc.kill(this.killGraceMs);
    this.log.info('harness started', { harness: harness.name, pid: proc.pid });
    const recorded = proc.pid > 0 ? recordGroup(this.deps.workDir, this.jobId, this.attempt, proc.pid).catch(() => undefined) : Promise.resolve();
    if (proc.pid > 0) this.deps.watchdog?.watch(proc.pid, this.marker);
    const parser = harness.parser(ctx, proc.pid);
    let turns = 0;
    const onEvents = (events: EventBody[]) => {
      for (const e of events) {
        this.deps.emit(e);
        if (e.type === (harness.turnEvent ?? 'usage') && ++turns > limits.maxTurns) {
          this.stop({ status: 'failed', reason: 'max_turns', error: `more than ${limits.maxTurns} model turns (agent limits.maxTurns)` });
        }
      }
      if (parser.fatal) void proc.kill(this.killGraceMs);
    };
    if (proc.pid > 0 && parser.begin) onEvents(parser.begin());
    const ticker = parser.tick ? setInterval(() => onEvents(parser.tick?.() ?? []), PARSER_TICK_MS) : null;
    // Idle limit: output and model calls (reported by the control plane) restart the clock.
    const idle = new IdleWatch({
      idleMs: limits.idleSeconds * 1000,
      ...(this.deps.refreshActivity ? { refresh: this.deps.refreshActivity } : {}),
      onIdle: () =>
        this.stop({
          status: 'failed',
          reason: 'blocked_on_input',
          error: `blocked on input: no output and no model call for ${limits.idleSeconds} s (agent limits.idleSeconds); the harness may be waiting for an answer on an interactive prompt`,
        }),
    });
    this.idle = idle;
    const touch = () => idle.output();
    const out = new LineSplitter((l) => onEvents(parser.stdout(l)));
    const err = new LineSplitter((l) => onEvents(parser.stderr(l)));
    // Backpressure (output-hold.ts): both pipes held while the upload is far behind.
    const backlog = this.deps.backlog;
    const hold = backlog ? new OutputHold([proc.stdout, proc.stderr], backlog, touch, () => this.stopped !== null) : null;
    proc.stdout.on('data', (c: Buffer) => {
      touch();
      out.push(c);
      hold?.check();
    });
    proc.stderr.on('data', (c: Buffer) => {
      touch();
      err.push(c);
      hold?.check();
    });
    const outEnded = new Promise<void>((r) => proc.stdout.once('close', () => r()));
    const errEnded = new Promise<void>((r) => proc.stderr.once('close', () => r()));

    const exit = await proc.exited;
    hold?.harnessExited(); // what is left in the pipes is read to their end
    if (!this.stopped) this.harnessExited = true;
    idle.stop();
    this.idle = null;
    // Nothing of the job outlives it: stragglers left in the group after the leader's exit die
    // too, then every process that left the group (setsid) but carries the job's marker.
    await proc.kill(this.killGraceMs);
    const left = await killJobProcesses(this.marker, proc.pid > 0 ? proc.pid : undefined);
    if (left.length) this.log.warn('job processes could not be killed', { pids: left });
    await recorded;
    await forgetGroup(this.deps.workDir, this.jobId, this.attempt).catch(() => undefined);
    if (proc.pid > 0) this.deps.watchdog?.unwatch(proc.pid);
    const pipesClosed = Promise.all([outEnded, errEnded, proc.closed]);
    const timedOut = await Promise.race([pipesClosed.then(() => false), delay(PIPE_CLOSE_TIMEOUT_MS).then(() => true)]);
    if (timedOut) {
      // A process outside the group (it called setsid) still holds the pipes: stop reading.
      this.log.warn('harness output pipes still open after its process group is gone; closing them');
      proc.stdout.destroy();
      proc.stderr.destroy();
    }
    out.end();
    err.end();
    if (ticker) clearInterval(ticker);
    if (parser.flush) onEvents(parser.flush());
    this.proc = null;
    return checkResume(a.resumeSessionId, parser.finish({ code: exit.code, signal: exit.signal, spawnError: exit.spawnError }));
  }

  private stop(how: JobFinished): void {
    if (this.finished || this.stopped) return;
    this.stopped = how;
    this.log.info('stopping job attempt', { reason: how.reason });
    this.abort.abort();
    if (this.proc) void this.proc.kill(this.killGraceMs);
  }

  /** Result fields from the workspace; a git failure there is logged, not fatal. */
  private async collect(ws: Workspace, summary: string | undefined): Promise<JobResult> {
    const result: JobResult = { branch: ws.branch };
    if (summary !== undefined) result.summary = summary;
    try {
      const c = await collectChanges(ws.dir, ws.baseCommit);
      result.branch = c.branch === 'HEAD' ? ws.branch : c.branch;
      if (c.commit) result.commit = c.commit;
      result.changedFiles = c.changedFiles;
    } catch (err) {
      this.log.warn('could not read the workspace changes', { error: (err as Error).message });
    }
    return result;
  }

  private finish(outcome: HarnessOutcome | null, result: JobResult | undefined): void {
    if (this.finished) return;
    this.finished = true;
    if (this.pauseTimer) clearTimeout(this.pauseTimer);
    if (this.lostReason !== null) {
      // No job.finished: the control plane decides (job-runner class comment).
      this.log.info('job attempt given up', { reason: this.lostReason });
      this.deps.emit({ type: 'progress', data: { phase: 'lost', message: `${ATTEMPT_GIVEN_UP}${this.lostReason}` } });
      return;
    }
    let data: JobFinished;
    if (this.stopped) {
      data = { ...this.stopped };
    } else if (this.budgetFailure !== null) {
      // the agent fails on an exhausted budget: whatever the harness did after the refusal
      // (exit 1, or exit 0 as if it were done: fresh-user finding), the attempt ended on it
      data = { status: 'failed', reason: 'budget', error: this.budgetFailure };
    } else if (outcome) {
      data = { status: outcome.status };
      if (outcome.reason !== undefined) data.reason = outcome.reason;
      if (outcome.error !== undefined) data.error = outcome.error;
    } else {
      data = { status: 'failed', reason: 'error', error: 'runner error: the attempt ended without an outcome' };
    }
    if (outcome?.sessionId) data.sessionId = outcome.sessionId;
    if (result) data.result = result;
    this.log.info('job attempt finished', { status: data.status, reason: data.reason });
    this.deps.emit({ type: 'job.finished', data });
  }

  private progress(phase: string, message: string): void {
    this.deps.emit({ type: 'progress', data: { phase, message } });
  }
}

/**
 * A resumed run must continue the session it was asked to: "no conversation found" (Claude
 * Code's words for an unknown session) or another session id than requested → failed
 * `resume_failed`, never a silent fresh start (issue 4, "Sessions").
 */
export function checkResume(requested: string | null, outcome: HarnessOutcome): HarnessOutcome {
  if (!requested) return outcome;
  if (/no conversation found/i.test(outcome.error ?? '')) {
    return { ...outcome, status: 'failed', reason: 'resume_failed', error: `resume failed: the harness has no conversation ${requested} (${outcome.error ?? ''})`.slice(0, 2000) };
  }
  if (outcome.sessionId !== requested) {
    const got = outcome.sessionId ? `session ${outcome.sessionId}` : 'no session id';
    return { ...outcome, status: 'failed', reason: 'resume_failed', error: `resume failed: asked to resume session ${requested}, the harness reported ${got}` };
  }
  return outcome;
}

class FinishError extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

class StoppedError extends Error {}

function delay(ms: number): Promise<void> {
  return new Promise((r) => {
    const t = setTimeout(r, ms);
    t.unref();
  });
}
