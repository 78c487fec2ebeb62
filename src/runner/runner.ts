import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { makeDir } from '../core/make-dir.js';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { RECONNECT_WINDOW_MS, RUNNER_STOPPED_REASON, RunnerInstance, runnerNameFrom, urlPasswords, type EventBody, type JobAssignment, type Labels, type RunnerToServer, type RunningJobReport, type ServerToRunner } from '../protocol/index.js';
import { silentLogger, type Logger } from '../core/log.js';
import { credentialPath, ensureSecretDir, loadCredential, normalizeServerUrl, register, saveCredential } from './credential.js';
import { probeHiding } from './secret-mask.js';
import { claudeCodeHarness } from './harness/claude-code.js';
import { commandHarness } from './harness/command.js';
import { codexHarness } from './harness/codex.js';
import type { Harness } from './harness/types.js';
import { JobRun } from './job-runner.js';
import { SecretMask } from './event-secrets.js';
import { lockWorkDir } from './work-lock.js';
import { killOrphans } from './orphans.js';
import { Outbox } from './outbox.js';
import { AuthError, Session, type ReconnectPolicy, type SessionEndedError } from './session.js';
import { Lease } from './lease.js';
import { JobWatchdog } from './watchdog.js';
import { SelfUpdater, type UpdateSettings } from './self-update.js';

/** Options of {@link startRunner}. Times in milliseconds. */
export interface RunnerOptions {
  /** http(s)://host:port of the control plane. */
  serverUrl: string;
  /** `flr_...` registration token, traded once for a credential (needed when workDir has none for this server). */
  registrationToken?: string;
  /**
   * True when `registrationToken` is one a person gave (`flotilla runner --token`): a stored
   * credential the server revoked is then replaced by registering with it, as a new runner (the
   * dashboard's token rotation and `runners revoke` + `runners token create` print that
   * command). False/absent (`flotilla up`'s local runner, whose token is made automatically): a
   * revoked runner never registers itself again; the error says to delete the credential.
   */
  registerIfRevoked?: boolean;
  /** Holds secret/credential.json (folder 0700, file 0600; hidden from jobs), workspaces/, homes/. Created if missing. */
  workDir: string;
  /**
   * More absolute paths (files and folders) hidden from jobs as the secret folder is
   * (secret-mask.ts), e.g. `flotilla up`'s admin token and database; one missing when a job
   * starts is skipped. Only where hiding works (as the secret folder).
   */
  hidePaths?: readonly string[];
  /**
   * Runner name (protocol RunnerName). At registration the default is os.hostname() made into one
   * (runnerNameFrom); a registered runner started without one keeps the name it has.
   */
  name?: string;
  /** Default {}. */
  labels?: Labels;
  /** Parallel jobs, 1–4; default 1. The owner's setting on the server (PATCH /api/runners/{id}) wins. */
  capacity?: number;
  /** Browser slots, 1 to `capacity`; default 1. @throws at start when out of range. */
  browserSlots?: number;
  /** SIGTERM → SIGKILL grace for a job's process group; default 10000. */
  graceMs?: number;
  /** After a budget pause, how long the harness may take to exit on its own before it is stopped (grace then applies), ms; default 2000. */
  pauseSettleMs?: number;
  /** Where relative `input.repo` paths resolve, and where every local repo must be (after realpath); default process.cwd(). */
  repoBaseDir?: string;
  /** The claude binary; default the one of the installed @anthropic-ai/claude-code package. */
  claudePath?: string;
  /** Jittered exponential backoff between reconnects; default 250..RECONNECT_WINDOW_MS (10000), spread over at least that window (full jitter: a fleet that lost its server together does not come back together). */
  reconnect?: ReconnectPolicy;
  /** How long startRunner waits for the first welcome before failing; default 15000. */
  connectTimeoutMs?: number;
  /**
   * This runner process's id to the server (`hello.instance`, protocol RunnerInstance); default
   * a random UUID made at start. The CLI hands its own on to the process it starts again after a
   * self-update (reexec.ts INSTANCE_ENV): the same runner going on, not a second process.
   * @throws at start when it is not a valid RunnerInstance.
   */
  instance?: string;
  /** Self-update on the server's `runner.update` (self-update.ts); default: the default command, and no restart (the update fails before its command runs). */
  update?: UpdateSettings;
  log?: Logger;
}

/** A started runner. */
export interface RunningRunner {
  runnerId: number;
  /**
   * Resolves (never rejects) when the server ended the session for good: this runner was
   * revoked (close 4403), or another runner process is connected with the same credential
   * (4409). The error's message names the server's reason. Its jobs were cancelled and it does
   * not reconnect; call {@link stop} to finish (the CLI then exits non-zero).
   */
  ended: Promise<SessionEndedError>;
  /**
   * Stops the runner. `cancelJobs` (default true; SIGTERM/SIGINT of `flotilla runner`): kill
   * running jobs (whole process groups, the runner's grace) and give them up (JobRun.lose: no
   * `job.finished`, a `progress` event of phase `lost` ending with RUNNER_STOPPED_REASON), so
   * the control plane ends them as a crashed runner's at once (server/hub-lost-attempt.ts):
   * retried when the agent has retries left, else `lost` — a runner stopped for maintenance is
   * no worse than one that crashed. Their events so far are delivered, waiting briefly for the
   * server to acknowledge. False: take no new jobs and
   * wait for the running ones to finish and be acknowledged. Then disconnects.
   *
   * With cancelJobs, the jobs' grace is the smaller of the runner's and {@link STOP_GRACE_MS}
   * (or `graceMs` when given), and the wait for acknowledgements ends {@link STOP_TOTAL_MS}
   * after the stop began (at least 1 s after the jobs are gone): a runner told to stop by
   * `docker stop` or Kubernetes (SIGTERM, SIGKILL 10 s later by default) has said it gave its
   * jobs up before it is killed. Called again while stopping (a second Ctrl-C) with a smaller
   * `graceMs` (0: SIGKILL now), it shortens the kill under way and returns the same promise.
   */
  stop(opts?: { cancelJobs?: boolean; graceMs?: number }): Promise<void>;
}

/** Version reported in `hello` (the package's). */
export const RUNNER_VERSION: string = readVersion();

/** How long an idle job waits for the control plane's `job.activity` reply before it is ended, ms. */
const ACTIVITY_REPLY_TIMEOUT_MS = 3000;
/** How long stop() waits for the server to acknowledge the last events, ms. */
const STOP_ACK_TIMEOUT_MS = 5000;
/** The most grace stop() gives a job's process group before SIGKILL, ms (see {@link RunningRunner.stop}). */
export const STOP_GRACE_MS = 7000;
/** When stop() with cancelJobs stops waiting for acknowledgements, ms after it began: within `docker stop`'s 10 s. */
export const STOP_TOTAL_MS = 9000;
/** With cancelJobs false: how long stop() waits for acknowledgements after the jobs ended, ms. */
const DRAIN_ACK_TIMEOUT_MS = 60_000;

interface Slot {
  run: JobRun;
  outbox: Outbox;
  done: Promise<void>;
}

/**
 * Starts the runner daemon: reuses `<workDir>/secret/credential.json` when it is for the same server,
 * else registers with `registrationToken`; connects the WebSocket and resolves after the first
 * `welcome`.
 * Holds `<workDir>/runner.lock` from start to stop: one runner per work folder. Each call is
 * one runner process to the server: a random instance id (`hello.instance`) kept across its
 * reconnects, so a second process with the same credential is refused (close 4409) instead of
 * the two replacing each other.
 * @throws Error when another live runner holds the work folder, when there is no credential
 *   and no registration token, when registration fails, when the server refuses the
 *   credential (401/403), when no welcome arrives within `connectTimeoutMs`;
 *   SessionEndedError when the server refuses this process because another runner process is
 *   connected with the same credential (4409), or the runner was revoked meanwhile (4403).
 */
export async function startRunner(opts: RunnerOptions): Promise<RunningRunner> {
  const workDir = resolve(opts.workDir);
  await makeDir(workDir); // not Node's recursive mkdir: it spins on some paths (core/make-dir.ts)
  // One runner per work folder, taken before anything in it is touched (orphan cleanup below
  // would otherwise kill a live runner's jobs).
  const lock = lockWorkDir(workDir);
  try {
    const r = await startLocked(opts);
    return {
      runnerId: r.runnerId,
      ended: r.ended,
      async stop(o) {
        try {
          await r.stop(o);
        } finally {
          lock.release();
        }
      },
    };
  } catch (err) {
    lock.release();
    throw err;
  }
}

async function startLocked(opts: RunnerOptions): Promise<RunningRunner> {
  const log = opts.log ?? silentLogger;
  const serverUrl = normalizeServerUrl(opts.serverUrl);
  // The host name made into a valid runner name (protocol RunnerName) unless one is given.
  const name = opts.name ?? runnerNameFrom(hostname());
  const labels = opts.labels ?? {};
  const capacity = opts.capacity ?? 1;
  if (!Number.isInteger(capacity) || capacity < 1 || capacity > 4) throw new Error(`capacity must be an integer from 1 to 4, got ${capacity}`);
  const browserSlots = opts.browserSlots ?? 1;
  if (!Number.isInteger(browserSlots) || browserSlots < 1 || browserSlots > capacity) {
    throw new Error(`browser slots must be an integer from 1 to the capacity (${capacity}), got ${browserSlots}`);
  }
  if (opts.instance !== undefined && !RunnerInstance.safeParse(opts.instance).success) throw new Error(`instance must be 1-64 visible ASCII characters, got ${JSON.stringify(opts.instance)}`);
  const graceMs = opts.graceMs ?? 10_000;
  const workDir = resolve(opts.workDir);
  const repoBaseDir = resolve(opts.repoBaseDir ?? process.cwd());
  await makeDir(workDir); // not Node's recursive mkdir: it spins on some paths (core/make-dir.ts)
  // Job process groups a previous (crashed) runner process left behind die first.
  await killOrphans(workDir, Math.min(graceMs, 5000), log);

  // The name each hello asks for: the one given, if any (absent: keep the name the runner has).
  // Not after registering: the runner has the name registration gave it (NAME-2 when taken, said
  // then), and asking for the taken one again would only warn a second time.
  let helloName: string | undefined = opts.name !== undefined ? name : undefined;
  const registerNow = async () => {
    if (!opts.registrationToken) {
      throw new Error(`no runner credential for ${serverUrl} in ${workDir}: give a registration token (flotilla runners token create) to register this runner`);
    }
    // Registering again (revoked, or a credential the server no longer knows) without --name:
    // the name it had, not the host name (a runner "build-1" came back as the machine's name).
    const asked = opts.name !== undefined ? name : (stored?.name ?? name);
    const r = await register(serverUrl, { token: opts.registrationToken, name: asked, labels, capacity });
    const c = { serverUrl, runnerId: r.runnerId, credential: r.credential, name: r.name ?? asked };
    helloName = undefined;
    await saveCredential(workDir, c);
    // Names are unique among live runners: a taken one is registered as NAME-2, ... (server says so).
    if (r.warning) log.warn(r.warning);
    log.info('runner registered', { runnerId: r.runnerId, name: r.name ?? asked });
    return c;
  };
  const stored = await loadCredential(workDir, serverUrl);
  let cred = stored ?? (await registerNow());
  // Jobs must not read the credential (issue 5, finding 1c; see secret-mask.ts): check once that hiding works here.
  const hidden = await ensureSecretDir(workDir);
  const cannotHide = await probeHiding(hidden, credentialPath(workDir));
  if (cannotHide) log.warn('the runner credential cannot be hidden from jobs on this machine', { why: cannotHide });

  const harnesses: Record<string, Harness> = { 'claude-code': claudeCodeHarness, command: commandHarness, codex: codexHarness };
  const executables: Record<string, string> = opts.claudePath ? { 'claude-code': opts.claudePath } : {};
  const slots = new Map<string, Slot>();
  const key = (jobId: number, attempt: number) => `${jobId}:${attempt}`;
  let stopping = false;
  let flushScheduled = false;

  // What the server is told this runner runs: a given-up attempt only while its processes live
  // (then the server ends the job as a lost runner's: hub-reconcile.ts), others until acknowledged.
  const running = (): RunningJobReport[] =>
    [...slots.values()].filter((s) => s.run.active || (!s.outbox.done && !s.run.lost)).map((s) => ({ jobId: s.run.jobId, attempt: s.run.attempt }));

  // The lease on the running jobs (lease.ts): once the server may have declared this runner
  // lost and given its jobs to another runner, none of them may still run here.
  // Stops the jobs when this process cannot: frozen or killed (watchdog.ts). It acts a little
  // after the lease would (slack: the runner's own stop comes first when it can act), and
  // kills at the same moment.
  const watchdog = new JobWatchdog({ log });
  const lease = new Lease({
    graceMs,
    log,
    onRenew: (stopInMs, t) => watchdog.renew(stopInMs + Math.min(t.killGraceMs / 2, 2000), stopInMs + t.killGraceMs),
    onExpire: (grace, silentMs, t) => {
      const why = `control plane unreachable: no heartbeat confirmed for ${Math.round(silentMs)} ms (its heartbeat timeout is ${t.timeoutMs} ms), so it may give the job to another runner`;
      for (const s of slots.values()) if (s.run.active) s.run.lose(why, grace);
    },
  });

  const flush = () => {
    flushScheduled = false;
    lease.check(); // a runner waking up stops its jobs before it uploads anything
    if (!session.ready) return;
    for (const s of slots.values()) {
      for (let batch = s.outbox.nextBatch(); batch; batch = s.outbox.nextBatch()) session.send(batch);
    }
  };
  const scheduleFlush = () => {
    if (flushScheduled) return;
    flushScheduled = true;
    setImmediate(flush);
  };
  const send = (msg: RunnerToServer) => {
    if (!session.send(msg)) log.debug('not connected; frame not sent', { type: msg.type });
  };
  // Callers waiting for the next `job.activity` frame (an idle job about to be ended).
  const activityWaiters = new Set<() => void>();
  const refreshActivity = (): Promise<void> =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(t);
        activityWaiters.delete(done);
        resolve();
      };
      const t = setTimeout(done, ACTIVITY_REPLY_TIMEOUT_MS);
      activityWaiters.add(done);
      if (!session.heartbeatNow()) done();
    });
  const forgetIfDone = (k: string) => {
    const s = slots.get(k);
    if (s && !s.run.active && s.outbox.done) slots.delete(k);
  };

  const assign = (a: JobAssignment) => {
    const k = key(a.jobId, a.attempt);
    if (slots.has(k)) {
      send({ type: 'job.accepted', jobId: a.jobId, attempt: a.attempt }); // a repeat after a reconnect
      return;
    }
    if (stopping || updater.updating !== null || lease.expired) {
      const reason = stopping ? 'runner is stopping' : lease.expired ? 'runner cannot confirm that the control plane hears it (lease expired)' : `runner is updating itself to ${updater.updating}`;
      send({ type: 'job.rejected', jobId: a.jobId, attempt: a.attempt, reason });
      return;
    }
    for (const s of slots.values()) {
      if (s.run.jobId === a.jobId && s.run.active) s.run.cancel(`superseded by attempt ${a.attempt}`);
    }
    // Jobs holding nothing (agent `holds: none`) take no slot; the server's count (owner setting) wins.
    const active = [...slots.values()].filter((s) => s.run.active && s.run.jobId !== a.jobId && s.run.assignment.agent.holds !== 'none').length;
    const limit = a.capacity ?? capacity;
    if (active >= limit && !a.force && a.agent.holds !== 'none') {
      send({ type: 'job.rejected', jobId: a.jobId, attempt: a.attempt, reason: `at capacity (${active} of ${limit} jobs running)` });
      return;
    }
    const outbox = new Outbox(a.jobId, a.attempt);
    // The job's events never carry its token or the runner's secrets (an agent may print its environment).
    // ... nor a password in a repository URL of its input (protocol/text.ts urlPasswords).
    const mask = new SecretMask([a.token, cred.credential, opts.registrationToken, ...urlPasswords(JSON.stringify(a.input))]);
    const run = new JobRun(a, {
      workDir,
      repoBaseDir,
      ...(cannotHide ? {} : { secretDir: hidden, ...(opts.hidePaths?.length ? { hidePaths: opts.hidePaths } : {}) }),
      serverUrl,
      graceMs,
      ...(opts.pauseSettleMs !== undefined ? { pauseSettleMs: opts.pauseSettleMs } : {}),
      harnesses,
      executables,
      log,
      refreshActivity,
      watchdog,
      emit: (e: EventBody) => {
        outbox.push(mask.event(e));
        scheduleFlush();
      },
      backlog: () => outbox.unacked,
    });
    send({ type: 'job.accepted', jobId: a.jobId, attempt: a.attempt });
    log.info('job assigned', { jobId: a.jobId, attempt: a.attempt, agent: a.agent.name });
    const done = run.run().finally(() => {
      if (run.lost) outbox.end(); // no job.finished follows
      forgetIfDone(k);
    });
    slots.set(k, { run, outbox, done });
  };

  const onMessage = (msg: Exclude<ServerToRunner, { type: 'welcome' }>) => {
    switch (msg.type) {
      case 'job.assign':
        assign(msg.assignment);
        return;
      case 'job.cancel': {
        const k = key(msg.jobId, msg.attempt);
        const s = slots.get(k);
        if (!s) return;
        if (s.run.active) {
          if (msg.fail) s.run.failForBudget(msg.reason);
          else if (msg.pause) s.run.pause(msg.reason);
          else s.run.cancel(msg.reason);
        }
        // Finished: drop undelivered events only when the server refuses them (stale attempt);
        // a repeated cancel of a `cancelling` job still wants its final events.
        else if (msg.discard) slots.delete(k);
        return;
      }
      case 'ack': {
        const k = key(msg.jobId, msg.attempt);
        slots.get(k)?.outbox.ack(msg.upTo);
        forgetIfDone(k);
        scheduleFlush(); // the ack opened the outbox's window (outbox.ts MAX_IN_FLIGHT_EVENTS)
        return;
      }
      case 'job.activity': {
        for (const j of msg.jobs) slots.get(key(j.jobId, j.attempt))?.run.modelActivity(j.inFlight, j.idleMs);
        for (const w of [...activityWaiters]) w();
        return;
      }
      case 'runner.update':
        updater.start(msg.version);
        return;
      case 'error':
        return; // logged by the session
    }
  };

  // This process, to the server: the same on every reconnect, another for any other process.
  const instance = opts.instance ?? randomUUID();
  let endedNow: (e: SessionEndedError) => void = () => {};
  const ended = new Promise<SessionEndedError>((resolve) => (endedNow = resolve));
  // Ended for good (revoked, credential taken): no ack can come, stop() waits for none.
  let endedForGood = false;
  void ended.then(() => (endedForGood = true));
  // What a welcome tells the user (a name or label the server did not take) holds for the whole
  // process: said once, not again on every reconnect.
  const said = new Set<string>();
  const warnOnce = (message: string) => {
    if (said.has(message)) return;
    said.add(message);
    log.warn(message);
  };
  const makeSession = (credential: string) =>
    new Session({
      serverUrl,
      credential,
      // A name only when one was given: a runner started again without --name keeps the name it
      // has (an admin may have renamed it, or it got NAME-2), not the host name again.
      hello: () => ({ type: 'hello', ...(helloName !== undefined ? { name: helloName } : {}), labels, capacity, browserSlots, version: RUNNER_VERSION, running: running(), instance, ...(updater.updating !== null ? { updating: updater.updating } : {}), ...(opts.update?.restart ? {} : { selfUpdate: false }) }),
      running,
      onWelcome: (w) => {
        // Bound by the registration token: say so where the user looks (the server only logs it).
        for (const l of w.ignoredLabels ?? []) warnOnce(`label ${l.key}=${l.asked} ignored: this runner's registration token binds ${l.key}=${l.bound}`);
        if (w.name !== undefined) warnOnce(`runner name ${name} belongs to another runner: this runner keeps the name ${w.name} (start it with --name ${w.name}, or revoke the other runner to free the name)`);
        for (const s of slots.values()) s.outbox.rewind();
        flush();
      },
      onMessage,
      onEnded: (e) => {
        // Revoked (the job tokens are dead already) or another process holds the credential
        // (the server gives this runner's jobs to that one's view): stop every job (whole process groups).
        for (const s of slots.values()) if (s.run.active) s.run.cancel(e.code === 4403 ? 'runner revoked' : 'runner credential in use by another runner process');
        endedNow(e);
      },
      reconnect: opts.reconnect ?? { minMs: 250, maxMs: RECONNECT_WINDOW_MS, spreadMs: RECONNECT_WINDOW_MS },
      lease,
      log,
    });
  // Self-update (server `runner.update`): no new job, the running ones finish, then the command.
  const updater = new SelfUpdater({
    settings: opts.update ?? {},
    send,
    idle: async () => {
      while ([...slots.values()].some((s) => s.run.active)) await Promise.all([...slots.values()].map((s) => s.done));
    },
    secrets: () => [cred.credential, ...(opts.registrationToken ? [opts.registrationToken] : [])],
    cwd: workDir,
    log,
  });
  const connectTimeoutMs = opts.connectTimeoutMs ?? 15_000;
  let session = makeSession(cred.credential);
  let welcome;
  try {
    welcome = await session.start(connectTimeoutMs);
  } catch (err) {
    // A stored credential the server no longer knows (e.g. a new database): register again if we can.
    // Not one it revoked: an admin took this runner out on purpose (flotilla up's local runner
    // came back by itself as a new runner); registering it again is a deliberate act.
    if (!(err instanceof AuthError) || !stored || !opts.registrationToken) throw err;
    if (err.code === 'runner_revoked' && !opts.registerIfRevoked) {
      throw new AuthError(`runner ${stored.runnerId} was revoked on ${serverUrl}: it cannot connect again; to register this machine as a new runner, delete ${credentialPath(workDir)} and start it with a new registration token (flotilla runners token create)`, err.code);
    }
    log.warn(err.code === 'runner_revoked' ? `runner ${stored.runnerId} was revoked; registering again with the registration token given` : 'stored runner credential refused; registering again', { workDir });
    try {
      cred = await registerNow();
    } catch (regErr) {
      // e.g. a spent token left in a unit file: say both refusals and what to do
      if (err.code !== 'runner_revoked') throw regErr;
      throw new AuthError(`runner ${stored.runnerId} was revoked on ${serverUrl}, and registering again with the token given failed: ${(regErr as Error).message}; create a new registration token (flotilla runners token create) and start the runner with it`, err.code);
    }
    session = makeSession(cred.credential);
    welcome = await session.start(connectTimeoutMs);
  }

  let stopped: Promise<void> | null = null;
  return {
    runnerId: welcome.runnerId,
    ended,
    stop(o?: { cancelJobs?: boolean; graceMs?: number }): Promise<void> {
      const cancel = o?.cancelJobs ?? true;
      // Given up, not cancelled: the server retries them as a crashed runner's (stop() docstring).
      // Called again (a second Ctrl-C), a smaller grace shortens the kill under way (JobRun.lose).
      if (cancel) {
        const grace = Math.min(graceMs, o?.graceMs ?? STOP_GRACE_MS);
        for (const s of slots.values()) s.run.lose(RUNNER_STOPPED_REASON, grace);
      }
      stopped ??= (async () => {
        const began = Date.now();
        stopping = true;
        const slotsNow = [...slots.values()];
        await Promise.all(slotsNow.map((s) => s.done));
        flush();
        const deadline = cancel ? Math.max(Date.now() + 1000, Math.min(Date.now() + STOP_ACK_TIMEOUT_MS, began + STOP_TOTAL_MS)) : Date.now() + DRAIN_ACK_TIMEOUT_MS;
        while (!endedForGood && [...slots.values()].some((s) => !s.outbox.done) && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 20));
        }
        await session.drain();
        await session.close();
        lease.close();
        watchdog.close();
        log.info('runner stopped');
      })();
      return stopped;
    },
  };
}

function readVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string };
    return pkg.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}
