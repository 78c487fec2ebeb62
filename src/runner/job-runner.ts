import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { EventBody, JobAssignment, JobResult } from '../protocol/index.js';
import type { Logger } from '../core/log.js';
import { renderTemplate } from '../core/template.js';
import type { Harness, HarnessContext, HarnessOutcome } from './harness/types.js';
import { LineSplitter } from './lines.js';
import { forgetGroup, recordGroup } from './orphans.js';
import { spawnGroup, type GroupProcess } from './process.js';
import { collectChanges, prepareWorkspace, WorkspaceError, type Workspace } from './workspace.js';

/** What a {@link JobRun} needs from its runner. */
export interface JobRunDeps {
  /** Runner work folder (workspaces/, homes/). */
  workDir: string;
  repoBaseDir: string;
  serverUrl: string;
  /** SIGTERM → SIGKILL grace, ms. */
  graceMs: number;
  /** Harness adapters by name (`claude-code`, ...). */
  harnesses: Readonly<Record<string, Harness>>;
  /** Executable override per harness name (e.g. `claude-code` → a test script). */
  executables?: Readonly<Record<string, string>>;
  /** Receives the attempt's events in order (the runner numbers and uploads them). */
  emit: (event: EventBody) => void;
  log: Logger;
}

type JobFinished = Extract<EventBody, { type: 'job.finished' }>['data'];

/** Longest wait for a job's output pipes to close after its process group is gone, ms. */
const PIPE_CLOSE_TIMEOUT_MS = 5000;

/**
 * One job attempt, from assignment to `job.finished`: progress events, workspace, harness
 * process (its events streamed through `emit`), wall-clock timeout
 * (agent.limits.timeoutSeconds → failed `timeout`), cancel (→ `cancelled`), and the result
 * (summary, branch, commit if HEAD moved, changed files incl. uncommitted ones).
 * `job.finished` is always the last event, emitted exactly once.
 */
export class JobRun {
  readonly jobId: number;
  readonly attempt: number;
  private proc: GroupProcess | null = null;
  private stopped: JobFinished | null = null;
  private readonly abort = new AbortController();
  private finished = false;
  private readonly log: Logger;

  constructor(
    readonly assignment: JobAssignment,
    private readonly deps: JobRunDeps,
  ) {
    this.jobId = assignment.jobId;
    this.attempt = assignment.attempt;
    this.log = deps.log.child({ jobId: this.jobId, attempt: this.attempt });
  }

  /** True until `job.finished` was emitted. */
  get active(): boolean {
    return !this.finished;
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

      ws = await prepareWorkspace({
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
    const home = join(this.deps.workDir, 'homes', `job-${this.jobId}`);
    if (!a.resumeSessionId) await rm(home, { recursive: true, force: true });
    await mkdir(home, { recursive: true });
    const prompt = renderTemplate(a.agent.promptText, { input: a.input, job: { id: this.jobId, rootId: a.rootId, attempt: this.attempt, branch: ws.branch } });
    const ctx: HarnessContext = {
      jobId: this.jobId,
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
    };
    let cmd;
    try {
      cmd = harness.command(ctx);
    } catch (err) {
      throw new FinishError('harness_start', (err as Error).message);
    }
    if (this.stopped) throw new StoppedError();
    this.progress('harness', `starting ${harness.name}`);
    const proc = spawnGroup(cmd.file, cmd.args, { cwd: cmd.cwd, env: cmd.env });
    this.proc = proc;
    if (this.stopped) void proc.kill(this.deps.graceMs);
    this.log.info('harness started', { harness: harness.name, pid: proc.pid });
    const recorded = proc.pid > 0 ? recordGroup(this.deps.workDir, this.jobId, this.attempt, proc.pid).catch(() => undefined) : Promise.resolve();
    const parser = harness.parser(ctx, proc.pid);
    const onEvents = (events: EventBody[]) => {
      for (const e of events) this.deps.emit(e);
      if (parser.fatal) void proc.kill(this.deps.graceMs);
    };
    const out = new LineSplitter((l) => onEvents(parser.stdout(l)));
    const err = new LineSplitter((l) => onEvents(parser.stderr(l)));
    proc.stdout.on('data', (c: Buffer) => out.push(c));
    proc.stderr.on('data', (c: Buffer) => err.push(c));
    const outEnded = new Promise<void>((r) => proc.stdout.once('close', () => r()));
    const errEnded = new Promise<void>((r) => proc.stderr.once('close', () => r()));

    const exit = await proc.exited;
    // Nothing of the job outlives it: stragglers left in the group after the leader's exit die too.
    await proc.kill(this.deps.graceMs);
    await recorded;
    await forgetGroup(this.deps.workDir, this.jobId, this.attempt).catch(() => undefined);
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
    this.proc = null;
    return parser.finish({ code: exit.code, signal: exit.signal, spawnError: exit.spawnError });
  }

  private stop(how: JobFinished): void {
    if (this.finished || this.stopped) return;
    this.stopped = how;
    this.log.info('stopping job attempt', { reason: how.reason });
    this.abort.abort();
    if (this.proc) void this.proc.kill(this.deps.graceMs);
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
    let data: JobFinished;
    if (this.stopped) {
      data = { ...this.stopped };
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
