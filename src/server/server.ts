import { checkServerEnv } from './env-check.js';
import { assertReachablePort } from './blocked-ports.js';
import { cancelOneJob } from './cancel-tree.js';
import type { AddressInfo } from 'node:net';
import { RECONNECT_WINDOW_MS, type TreeLimits } from '../protocol/index.js';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import type { Store } from '../store/types.js';
import { silentLogger, type Logger } from '../core/log.js';
import type { GatewayConfig } from '../gateway/config.js';
import { createGateway, DRAIN_GRACE_MS } from '../gateway/gateway.js';
import { ModelDirectory } from '../gateway/model-directory.js';
import { mountGatewayRoutes } from './routes/gateway-routes.js';
import { AgentRegistry } from './agents.js';
import { ensureAdminToken } from './auth.js';
import { API_BODY_TOO_LARGE, createApp, MAX_API_BODY_BYTES } from './app.js';
import { lingerOnEnd, noBodyWillCome, replyBeforeBody } from '../core/linger.js';
import type { ServerContext } from './context.js';
import { Dispatcher, type KickReason } from './dispatcher.js';
import { EffortSettings } from './effort-cache.js';
import { EventBus } from './event-bus.js';
import { CLOSE_CODES, RunnerHub } from './hub.js';
import { Sweeper } from './sweeper.js';
import { budgetPauser, endedHoldTap, resumeHoldEnder } from './budget-pause.js';
import { budgetWaitSweep } from './budget-sweep.js';
import { abortCallsOnJobEnd } from './live-call-aborts.js';
import { liveCallFence } from './live-call-fence.js';
import { pausedAttemptEnded, pausedExitTap, type PausedExitDeps } from './paused-exit.js';
import { TaskEngine } from './tasks/engine.js';
import { serveHook } from './hooks/hooks-node.js';
import { MAX_HOOK_BODY_BYTES } from './hooks/receive.js';
import { expectContinue } from '../gateway/node-adapter.js';
import { serveIgnoringUpgrade } from './ignored-upgrade.js';
import { answerClientError, refuseWithoutHost } from './client-error.js';
import { toOriginForm } from './request-target.js';

/** Options of {@link startServer}. Durations in milliseconds. */
export interface ServerOptions {
  store: Store;
  /** Where `admin-token` is written on first start. */
  dataDir: string;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 8787; 0 = an ephemeral port (see {@link RunningServer.port}). */
  port?: number;
  /** Folders of `<name>/agent.yaml` (+ prompt, optional script.yaml); later folders override earlier ones. */
  agentsDirs: string[];
  gateway: GatewayConfig;
  /** Told to runners in `welcome`; default 5000. */
  heartbeatIntervalMs?: number;
  /** A runner silent longer is offline and its jobs are lost; default 20000. */
  heartbeatTimeoutMs?: number;
  /** Liveness sweep period; default 2000. */
  sweepIntervalMs?: number;
  /** How often a sweep checks the trees waiting for budget room, ms (server/budget-sweep.ts; default BUDGET_SWEEP_INTERVAL_MS, 10 s). */
  budgetSweepIntervalMs?: number;
  /** Periodic dispatch pass (jobs created by other replicas); default 1000. */
  dispatchIntervalMs?: number;
  /** Hold newly registered runners (status `provisioning`) this long while they finish setup; default 0 (off). */
  newRunnerHoldMs?: number;
  /** Depth and job-count limits per job tree (issue 6); default FLOTILLA_TREE_MAX_DEPTH / FLOTILLA_TREE_MAX_JOBS or 3 / 50. */
  treeLimits?: TreeLimits;
  /** Largest frame a runner may send, bytes (bigger closes its connection); default 16 MiB. */
  maxRunnerFrameBytes?: number;
  /** Runner upgrades authenticating at once above which new ones get 503 + Retry-After; default 64. */
  maxPendingRunnerConnects?: number;
  /**
   * At close, how long the model calls in flight may run on before they are aborted, ms
   * (gateway.ts drain); default 8,000.
   */
  gatewayDrainMs?: number;
  /** Task pass period (ends finished turns, fires trailing wakes); default 1000. */
  taskPollMs?: number;
  /** How often the jobs of live model calls are read back, for jobs ended through another replica, ms (live-call-fence.ts); default 1000. */
  liveCallFenceMs?: number;
  /**
   * How long a request may take to arrive whole (headers and body), ms; past it 408 and the
   * connection closes (node's `requestTimeout`, checked every few seconds); default node's 300,000.
   */
  requestTimeoutMs?: number;
  log?: Logger;
  /** Clock (epoch ms); default Date.now. For tests. */
  now?: () => number;
}

/** A started control plane. */
export interface RunningServer {
  /** `http://host:port` */
  url: string;
  port: number;
  /** The admin token when created now or readable from `<dataDir>/admin-token`, else null. */
  adminToken: string | null;
  /**
   * Stops timers, closes runner sockets and event streams, stops taking connections, lets the
   * model calls in flight end and be recorded (up to `gatewayDrainMs`, then aborted and settled:
   * gateway.ts drain), then closes the HTTP server. Does not close the store. `drainMs`, when
   * smaller, bounds that wait instead (`flotilla up`: what is left of its stop's time once its
   * own runner has stopped its jobs, cli/local/stack.ts). A second call returns the first's promise.
   */
  close(o?: { drainMs?: number }): Promise<void>;
  /** During {@link close}: cut the model calls still running now, settled with what was seen (a second Ctrl-C). */
  hurryClose(): void;
}

/**
 * Starts the control plane: HTTP API + SSE, the runner WebSocket hub at
 * `/api/runners/connect`, the dispatcher, the liveness sweeper, and the model gateway
 * (`/v1/*`) on one HTTP server.
 * @throws Error naming the agent file and field when an agent is bad; Error naming host:port
 *   when it cannot listen (e.g. in use), or when the port is one the Fetch standard blocks
 *   (blocked-ports.ts); Error when the heartbeat timeout is shorter than two heartbeat intervals.
 */
/**
 * How long the liveness sweep waits after this server starts, ms: one heartbeat timeout, or
 * after a restart (a runner not revoked heartbeated within the last timeout + that window) at
 * least twice the runners' reconnect window (RECONNECT_WINDOW_MS: their spread-out backoff,
 * then possibly one "busy, retry after" of up to 8 s). A short timeout would otherwise lose the
 * running jobs of runners that were only waiting to reconnect. `now` epoch ms.
 */
async function restartGraceMs(store: Store, heartbeatTimeoutMs: number, now: number): Promise<number> {
  const grace = Math.max(heartbeatTimeoutMs, 2 * RECONNECT_WINDOW_MS);
  const since = now - heartbeatTimeoutMs - grace;
  const restarted = (await store.listRunners()).some((r) => r.revokedAt === null && r.lastHeartbeatAt !== null && r.lastHeartbeatAt > since);
  return restarted ? grace : heartbeatTimeoutMs;
}

/** A gateway path spelt with more than one leading slash, capitals or an encoded slash (`/v1%2fmessages`): served by the gateway (its 404, in the client's wire format). */
const MISSPELT_GATEWAY_PATH = /^\/+v1(\/|%2f)/i;

export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const log = opts.log ?? silentLogger;
  const now = opts.now ?? Date.now;
  const host = opts.host ?? '127.0.0.1';
  const heartbeatIntervalMs = opts.heartbeatIntervalMs ?? 5000;
  const heartbeatTimeoutMs = opts.heartbeatTimeoutMs ?? 20000;
  // A runner must get at least two heartbeats into every timeout window, or one late beat
  // would mark a healthy runner offline and lose its jobs.
  if (heartbeatTimeoutMs < 2 * heartbeatIntervalMs) {
    throw new Error(`heartbeat timeout (${heartbeatTimeoutMs} ms) must be at least twice the heartbeat interval (${heartbeatIntervalMs} ms)`);
  }
  assertReachablePort(opts.port ?? 8787);
  const { store } = opts;

  for (const w of await checkServerEnv(store, process.env, opts.treeLimits !== undefined)) log.warn(w);
  const agents = await AgentRegistry.load(opts.agentsDirs, log);
  // Installed agents (issue 6) live in the store: read now, and re-read every 2 s so an
  // install through another replica reaches this one within 2 s (as model routes do).
  await agents.useStore(store, log.child({ part: 'agents' }));
  const agentsTimer = setInterval(() => void agents.refresh().catch((err: Error) => log.warn('agents refresh failed', { error: err.message })), 2000);
  agentsTimer.unref();
  const adminToken = await ensureAdminToken(store, opts.dataDir, now());
  const bus = new EventBus();
  // The hub and the dispatcher refer to each other; `kick` is bound once both exist.
  let kick = (_reason?: KickReason) => {};
  const pausedExit: PausedExitDeps = { store, bus, log: log.child({ part: 'hub' }), now, onWork: () => kick() };
  const hub = new RunnerHub({ store, bus, log: log.child({ part: 'hub' }), now, heartbeatIntervalMs,
    heartbeatTimeoutMs,
    onWork: (reason) => kick(reason),
    onPausedGone: (jobId, attempt, why) => pausedAttemptEnded(pausedExit, jobId, attempt, why),
    ...(opts.maxRunnerFrameBytes !== undefined ? { maxFrameBytes: opts.maxRunnerFrameBytes } : {}),
    ...(opts.maxPendingRunnerConnects !== undefined ? { maxPendingConnects: opts.maxPendingRunnerConnects } : {}),
  });
  // Effort settings for POST /api/jobs and dispatch, read from the store at most every 2 s (effort-cache.ts).
  const effort = new EffortSettings(store);
  const dispatcher = new Dispatcher({ store, hub, agents, bus, effort, log: log.child({ part: 'dispatch' }), now, intervalMs: opts.dispatchIntervalMs ?? 1000 });
  kick = (reason) => dispatcher.kick(reason);
  // A paused job's stopped attempt ended on its runner: free its slot, or resume it (issue 3).
  bus.tap(pausedExitTap(pausedExit));
  // A resumed job that ends without its call frees the room it held for its paused siblings (issue 3).
  bus.tap(endedHoldTap({ store, bus, log: log.child({ part: 'gateway' }), now, kick: () => dispatcher.kick() }));
  const sweeper = new Sweeper({
    store,
    bus,
    log: log.child({ part: 'sweeper' }),
    now,
    timeoutMs: heartbeatTimeoutMs,
    intervalMs: opts.sweepIntervalMs ?? 2000,
    startedAt: now(),
    startupGraceMs: await restartGraceMs(store, heartbeatTimeoutMs, now()),
    closeSilent: (cutoff) => hub.closeSilent(cutoff),
    disconnect: (runnerId, reason) => void hub.disconnect(runnerId, CLOSE_CODES.silent, reason),
    onLost: () => dispatcher.kick(),
    // Room held for a resumed job that ended some way no hook saw, and the jobs it would resume (issue 3).
    // (`directory` is made below, before the sweeper starts)
    onBudgetWait: budgetWaitSweep({ store, bus, log: log.child({ part: 'gateway' }), now, kick: () => dispatcher.kick(), prices: () => directory.prices(), budgetHoldMs: opts.gateway.budgetHoldMs }, opts.budgetSweepIntervalMs),
    // A parent that ended leaves nobody to collect its children's results (issue 6): cancel them.
    onOrphans: async (orphans) => {
      for (const o of orphans) {
        if (await cancelOneJob(ctx, o.id, `its parent job ${o.parentId} ended (${o.parentStatus}) without waiting for it`)) log.info('orphaned child job cancelled', { jobId: o.id, parentId: o.parentId });
      }
      dispatcher.kick();
    },
  });
  const ctx: ServerContext = {
    store,
    agents,
    bus,
    hub,
    dispatcher,
    effort,
    log,
    now,
    heartbeatTimeoutMs,
    newRunnerHoldMs: opts.newRunnerHoldMs ?? 0,
    ...(opts.gateway.budgetHoldMs !== undefined ? { budgetHoldMs: opts.gateway.budgetHoldMs } : {}),
    ...(opts.treeLimits ? { treeLimits: opts.treeLimits } : {}),
    ...(adminToken !== null ? { adminToken } : {}),
    sse: { heartbeatMs: 15000, pollMs: 1000, open: new Set() },
  };
  const tasks = new TaskEngine(ctx, opts.taskPollMs ?? 1000);
  ctx.tasks = tasks;
  const app = createApp(ctx);
  // Model routes and prices: configuration overlaid with the API's (issue 3); the API below
  // invalidates this process's copy after a change.
  const directory = new ModelDirectory(store, opts.gateway.modelProviders, opts.gateway.prices);
  mountGatewayRoutes(app, ctx, { config: opts.gateway, directory });
  const gateway = createGateway({
    store,
    config: opts.gateway,
    directory,
    log: log.child({ part: 'gateway' }),
    scriptFor: async (job) => {
      return agents.scriptFor(job.agent, job.agentVersion);
    },
    // only a call that does not fit even with no call in flight pauses its job; one kept out by
    // calls in flight gets a retryable 429 (gateway/budget-wait.ts)
    onBudgetExhausted: budgetPauser({ store, agents, bus, log: log.child({ part: 'gateway' }), now, stop: (runnerId, msg) => hub.send(runnerId, msg), kick: () => dispatcher.kick() }),
    failsOnBudget: (job) => agents.get(job.agent)?.onBudgetExhausted === 'fail',
    onResumedCallRecorded: resumeHoldEnder({ store, bus, log: log.child({ part: 'gateway' }), now, kick: () => dispatcher.kick() }),
  });
  // a cancelled, lost or fenced attempt's live model calls stop at once (gateway/live-calls.ts)
  abortCallsOnJobEnd(bus, (jobId) => gateway.abortJob(jobId), log.child({ part: 'gateway' }));
  // ... and those of a job ended through another replica within a second (live-call-fence.ts)
  const fence = liveCallFence({ store, liveJobs: () => gateway.liveJobs(), abortJob: (jobId, before) => gateway.abortJob(jobId, before), log: log.child({ part: 'gateway' }), ...(opts.liveCallFenceMs !== undefined ? { intervalMs: opts.liveCallFenceMs } : {}) });
  // The gateway's /v1/* calls (issue 3 speed goals) and the webhook deliveries (issue 7) go to
  // plain node:http handlers, past Hono and web streams; everything else to the Hono app.
  const honoListener = getRequestListener(app.fetch);
  // node's own Host check answers a bare 400: ours names it (client-error.ts)
  // `//v1/…` or `/V1/…` (a client's base URL ending in `/`): the gateway's 404 in the client's wire format, naming it
  const isGatewayPath = (url: string | undefined) => url !== undefined && (url.startsWith('/v1/') || MISSPELT_GATEWAY_PATH.test(url));
  const declared = (req: IncomingMessage) => Number(req.headers['content-length'] ?? 0);
  /** An API request whose content-length is over the API's limit (app.ts). */
  const apiOverLimit = (req: IncomingMessage) => req.url?.startsWith('/api/') === true && declared(req) > MAX_API_BODY_BYTES;
  /** An API or webhook request whose content-length is over its path's limit (app.ts, hooks/receive.ts). */
  const declaredOverLimit = (req: IncomingMessage) => apiOverLimit(req) || (req.url?.startsWith('/hooks/') === true && declared(req) > MAX_HOOK_BODY_BYTES);
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    toOriginForm(req); // RFC 9112 §3.2.2 (request-target.ts)
    if (refuseWithoutHost(req, res)) return;
    if (isGatewayPath(req.url)) gateway.node(req, res);
    else if (req.url?.startsWith('/hooks/') && serveHook(ctx, req, res)) return;
    // an API body declared over the limit: the 413 here, its bytes read and dropped before the
    // close (core/linger.ts; Hono's bodyLimit answered it, but node then closed the connection
    // of a client that asked for that with the body unread, and the client got a reset)
    else if (apiOverLimit(req)) replyBeforeBody(req, res, 413, JSON.stringify(API_BODY_TOO_LARGE));
    else {
      // a body the app may refuse before reading it all (bodyLimit on a chunked upload, a 401):
      // the reply's end waits for it, so node does not close on unread bytes (a reset)
      if (req.headers['transfer-encoding'] !== undefined || declared(req) > 0) lingerOnEnd(req, res);
      void honoListener(req, res);
    }
  };
  const server = createServer({ requireHostHeader: false, ...(opts.requestTimeoutMs !== undefined ? { requestTimeout: opts.requestTimeoutMs, connectionsCheckingInterval: Math.min(30_000, Math.max(100, opts.requestTimeoutMs / 4)) } : {}) }, onRequest);
  // `Expect: 100-continue`: a model call gets its 100 Continue only once the gateway will read
  // its body (not before a 401 or 413 it answers from the headers: node-adapter.ts
  // expectContinue); an API or webhook body declared over its limit never (it is refused from
  // the headers); every other request at once, as node's default does
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    toOriginForm(req);
    if (isGatewayPath(req.url)) expectContinue(req);
    // a body declared over its path's limit is refused from the headers: no 100 invites it
    // (a fresh tester: curl sent 2 MB after the 100, then got the 413)
    else if (declaredOverLimit(req)) noBodyWillCome(req);
    else res.writeContinue();
    onRequest(req, res);
  });
  // a request node's parser refused gets a body naming what is wrong, not a bare status (client-error.ts)
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => answerClientError(err, socket));
  server.on('upgrade', (req, socket, head) => {
    toOriginForm(req);
    const path = (req.url ?? '').split('?')[0];
    if (path === '/api/runners/connect') return hub.handleUpgrade(req, socket, head);
    // any other upgrade (h2c, a WebSocket to /v1/…) is ignored: the request is served as asked (ignored-upgrade.ts)
    serveIgnoringUpgrade(server, req, socket, head);
  });
  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error) => reject(new Error(`cannot listen on ${host}:${opts.port ?? 8787}: ${err.message}`));
    server.once('error', onError);
    server.listen(opts.port ?? 8787, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  dispatcher.start();
  sweeper.start();
  tasks.start();
  log.info('server listening', { url, agents: agents.list().map((a) => a.name).join(',') });

  let closing: Promise<void> | null = null;
  const close = (o?: { drainMs?: number }) =>
    (closing ??= (async () => {
      clearInterval(agentsTimer);
      fence.stop();
      await tasks.stop();
      await sweeper.stop();
      await dispatcher.stop();
      for (const end of [...ctx.sse.open]) end();
      // Runners connected stay so through the drain below, their heartbeats answered: closed
      // first, a runner heard nothing for the drain (up to 8 s of a streaming call) plus the
      // restart, and a restart under load passed 0.7 of the heartbeat timeout, where runners
      // give their jobs up (a fresh tester lost a job that made no model call at all).
      hub.stopAccepting();
      // No new connections; the model calls in flight end and are recorded before the store
      // closes (the caller closes it next): closed under them, their ledger rows were lost.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      const drainMs = o?.drainMs !== undefined ? Math.min(o.drainMs, opts.gatewayDrainMs ?? DRAIN_GRACE_MS) : opts.gatewayDrainMs;
      const drained = await gateway.drain(drainMs);
      if (drained.open > 0) log.info('gateway: model calls in flight at stop', drained);
      await hub.close();
      server.closeAllConnections();
      await closed;
      log.info('server stopped', { url });
    })());
  return { url, port, adminToken, close, hurryClose: () => gateway.hurryDrain() };
}
