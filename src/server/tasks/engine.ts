import { isTerminal } from '../../core/job-state.js';
import { mergeSelector } from '../../core/labels.js';
import { usdToMicros } from '../../core/money.js';
import { renderWakePrompt } from '../../core/task-prompt.js';
import type { JobRow, TaskRow } from '../../store/types.js';
import type { ServerContext } from '../context.js';
import { recordStatus } from '../status-events.js';
import { cancelTaskJob } from './cancel-job.js';
import { turnBudget } from './task-budget.js';

/** What the engine needs from the server. */
export type TaskEngineDeps = Pick<ServerContext, 'store' | 'agents' | 'bus' | 'hub' | 'dispatcher' | 'log' | 'now'>;

/**
 * Runs tasks (issue 7): a wake takes the task's pending events and queued prompts into one
 * turn, a job of its agent that resumes the task's session in its workspace on its runner;
 * coalescing sends the events of a window in one trailing wake; a poll (every `pollMs`, and
 * once at start, so a restart or another replica loses nothing) ends turns whose job ended
 * and fires trailing wakes that are due. Everything that must happen once across replicas
 * is claimed with a conditional UPDATE in the store.
 */
export class TaskEngine {
  private timer: NodeJS.Timeout | null = null;
  private readonly trailing = new Map<number, NodeJS.Timeout>();
  private ticking: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly deps: TaskEngineDeps,
    private readonly pollMs = 1000,
  ) {}

  /** Starts the poll (first pass at once). */
  start(): void {
    this.stopped = false;
    void this.tick();
    this.timer = setInterval(() => void this.tick(), this.pollMs);
    this.timer.unref();
  }

  /** Stops timers and waits for a running pass. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    for (const t of this.trailing.values()) clearTimeout(t);
    this.trailing.clear();
    await this.ticking;
  }

  /** One pass: end finished turns, fire due trailing wakes, arm timers for the others. */
  tick(): Promise<void> {
    return (this.ticking ??= (async () => {
      try {
        await this.endFinishedTurns();
        await this.fireTrailingWakes();
      } catch (err) {
        this.deps.log.error('task pass failed', { err: String(err) });
      } finally {
        this.ticking = null;
      }
    })());
  }

  /**
   * Wakes a task now: claims a turn (only when idle with something pending) and creates its
   * job. Returns the job, or null when there was nothing to do or the task is busy.
   */
  async wake(taskId: number): Promise<JobRow | null> {
    const { store, agents, log } = this.deps;
    const now = this.deps.now();
    const claim = await store.claimTaskTurn(taskId, now);
    if (!claim) return null;
    const { task, turn } = claim;
    const agent = agents.get(task.agent);
    const fail = async (why: string) => {
      await store.abandonTaskTurn(taskId, turn, this.deps.now());
      await store.updateTask(taskId, null, { error: why }, this.deps.now());
      log.warn('task wake failed', { taskId, why });
      return null;
    };
    if (!agent) return fail(`agent ${JSON.stringify(task.agent)} is not loaded`);
    const taskPrompt = renderWakePrompt(task, claim.events, claim.prompts.map((p) => p.text));
    const input = { ...task.input, taskPrompt, taskId: task.id, taskTurn: turn };
    const problems = agents.validateInput(agent.name, input);
    if (problems.length) return fail(`input for agent ${agent.name}: ${problems.map((p) => `${p.field}: ${p.message}`).join('; ')} (a task agent's inputSchema must allow taskPrompt, taskId, taskTurn)`);
    // A task with a budget gives the turn what is left of it; with nothing left no turn starts
    // (the events and prompts stay pending until a top-up wakes it: task-budget.ts).
    const budget = turnBudget(task, usdToMicros(agent.limits.defaultBudgetUsd));
    if ('spent' in budget) return fail(budget.spent);
    const resume = task.sessionId !== null && task.runnerId !== null && task.workspaceJobId !== null;
    if (resume) {
      // The turn would resume a session kept on a revoked runner: a job pinned there never runs
      // (it waited queued for ever while the task read `running`: fresh-tester finding). The task
      // says its workspace is gone; its events and prompts stay pending for a resume.
      const runner = await store.getRunner(task.runnerId!);
      if (!runner || runner.revokedAt !== null) {
        await store.abandonTaskTurn(taskId, turn, this.deps.now());
        const why = `workspace or session gone: runner ${runner ? `${runner.name} (${runner.id})` : task.runnerId}, which kept this task's session, ${runner ? 'was revoked' : 'no longer exists'}; resume the task to start over in a fresh workspace (flotilla tasks resume ${taskId})`;
        await store.updateTask(taskId, ['idle'], { status: 'workspace_lost', error: why }, this.deps.now());
        log.warn('task wake failed: workspace lost', { taskId, runnerId: task.runnerId });
        return null;
      }
    }
    let job: JobRow;
    try {
      job = await store.createJob({
        parentId: null,
        agent: agent.name,
        agentVersion: agent.version,
        input,
        selector: mergeSelector(agent.runnerLabels, {}),
        priority: 0,
        budgetMicros: budget.micros,
        retries: resume ? 0 : agent.retries,
        ...(resume ? { resumeSessionId: task.sessionId, pinnedRunnerId: task.runnerId, workspaceJobId: task.workspaceJobId } : {}),
        now,
      });
    } catch (err) {
      return fail(`cannot create the turn's job: ${(err as Error).message}`);
    }
    if (!(await store.attachTurnJob(taskId, turn, job.id, now))) log.warn('task turn moved before its job was attached', { taskId, turn, jobId: job.id });
    const why = resume ? `task ${taskId} turn ${turn}: resuming session ${task.sessionId} on runner ${task.runnerId}` : `task ${taskId} turn ${turn}: waiting for a runner`;
    await recordStatus(store, this.deps.bus, job.id, 'queued', why, now);
    this.deps.dispatcher.kick();
    log.info('task woke', { taskId, turn, jobId: job.id, events: claim.events.length, prompts: claim.prompts.length });
    return job;
  }

  /**
   * An event was recorded for the task: wake it now (first event of a window) or leave it for
   * the trailing wake at the window's end. Returns which.
   */
  async onEvent(taskId: number, known?: Pick<TaskRow, 'status'>): Promise<'woke' | 'coalesced' | 'queued'> {
    const task = known ?? (await this.deps.store.getTask(taskId));
    if (!task || task.status === 'suspended' || task.status === 'completed' || task.status === 'workspace_lost') return 'queued';
    const noted = await this.deps.store.noteTaskEvent(taskId, this.deps.now());
    if (!noted) return 'queued';
    if (noted.decision === 'coalesced') {
      this.arm(taskId, noted.trailingDueAt);
      return 'coalesced';
    }
    return (await this.wake(taskId)) ? 'woke' : 'queued';
  }

  /** Completes a task (keys released) and cancels its running job. Null when already completed / missing. */
  async complete(taskId: number, why: string): Promise<TaskRow | null> {
    const done = await this.deps.store.completeTask(taskId, this.deps.now());
    if (done?.currentJobId) await cancelTaskJob(this.deps, done.currentJobId, why);
    return done;
  }

  /** Interrupts the current turn only (cancels its job); the task stays, its next wake resumes. */
  async stopTurn(taskId: number): Promise<JobRow | null> {
    const t = await this.deps.store.getTask(taskId);
    if (!t?.currentJobId) return null;
    return cancelTaskJob(this.deps, t.currentJobId, `task ${taskId}: turn stopped by request`);
  }

  /** Arms this server's timer for a trailing wake due at `dueAt` (epoch ms), noted by the store (e.g. in `ingestDelivery`). */
  armTrailing(taskId: number, dueAt: number): void {
    this.arm(taskId, dueAt);
  }

  private arm(taskId: number, dueAt: number): void {
    if (this.stopped || this.trailing.has(taskId)) return;
    const t = setTimeout(() => {
      this.trailing.delete(taskId);
      void this.tick();
    }, Math.max(0, dueAt - this.deps.now()) + 5);
    t.unref();
    this.trailing.set(taskId, t);
  }

  private async fireTrailingWakes(): Promise<void> {
    const now = this.deps.now();
    for (const { taskId, dueAt } of await this.deps.store.listTrailingWakes()) {
      if (dueAt > now) {
        this.arm(taskId, dueAt);
        continue;
      }
      if (await this.deps.store.claimTrailingWake(taskId, dueAt, now)) {
        const job = await this.wake(taskId);
        this.deps.log.info('task trailing wake', { taskId, jobId: job?.id ?? null });
      }
    }
  }

  private async endFinishedTurns(): Promise<void> {
    const { store, log } = this.deps;
    for (const { taskId, jobId, jobStatus } of await store.listTaskTurnJobs()) {
      // Most turns are still running: known from the list's own join, without reading each job every poll.
      if (jobStatus !== null && !isTerminal(jobStatus)) continue;
      const job = await store.getJob(jobId);
      if (job && !isTerminal(job.status)) continue;
      const lost = job?.status === 'failed' && job.endReason === 'resume_failed';
      // `idle` too: a task reopened (or resumed) while its cancelled turn was still ending is idle
      // with that turn's job; left set, no later turn could start (fresh-user finding: its
      // events waited for ever)
      const ended = await store.updateTask(
        taskId,
        ['running', 'suspended', 'completed', 'idle'],
        {
          whereCurrentJobId: jobId,
          currentJobId: null,
          // A turn that recorded a session leaves its workspace for the next one (the first such turn's).
          ...(job?.sessionId && job.runnerId ? { sessionId: job.sessionId, runnerId: job.runnerId, workspaceJobId: job.workspaceJobId ?? job.id } : {}),
          ...(lost ? { error: `workspace or session gone: ${job.error ?? 'resume failed'}` } : {}),
        },
        this.deps.now(),
      );
      if (!ended) continue;
      // running → idle (or workspace_lost); suspended/completed/idle stay as they are. An idle task
      // with a workspace on a runner keeps that runner slot for the agent's idle time (0012).
      if (ended.status === 'running') {
        const t = this.deps.now();
        const idleMs = (this.deps.agents.get(ended.agent)?.limits.idleSeconds ?? 0) * 1000;
        const keep = !lost && ended.runnerId !== null && ended.workspaceJobId !== null && idleMs > 0;
        await store.updateTask(taskId, ['running'], { status: lost ? 'workspace_lost' : 'idle', slotUntil: keep ? t + idleMs : null }, t);
      }
      log.info('task turn ended', { taskId, jobId, job: job?.status ?? 'missing', workspaceLost: lost });
      const t = await store.getTask(taskId);
      if (t && t.status === 'idle' && t.trailingDueAt === null && (t.pendingEvents > 0 || t.queuedPrompts > 0)) await this.wake(taskId);
    }
  }
}
