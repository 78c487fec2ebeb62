import { chmod, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { runnerNameFrom, type Labels } from '../../protocol/index.js';
import { createLogger, type Logger, type LogLevel } from '../../core/log.js';
import { turnBatchedLines } from '../../core/log-sink.js';
import { settingFromEnv } from '../../core/setting-env.js';
import { treeLimitsFromEnv } from '../../core/job-tree.js';
import { loadGatewayConfig, type GatewayConfig } from '../../gateway/config.js';
import { loadGatewaySettings } from '../../gateway/config-file.js';
import { createApiToken, registrationToken } from '../../server/auth.js';
import { startServer, type RunningServer } from '../../server/server.js';
import { startRunner, STOP_TOTAL_MS, type RunningRunner } from '../../runner/runner.js';
import { AuthError } from '../../runner/session.js';
import { credentialPath } from '../../runner/credential.js';
import { adoptLocalCredential, localRunnerInstance } from './local-runner-identity.js';
import { assertDatabaseUrl, openStore } from '../../store/open.js';
import type { Store } from '../../store/types.js';
import { makeDir } from '../../core/make-dir.js';
import { packageRoot } from '../paths.js';
import { CliError } from '../options.js';

/** Options of {@link startLocalStack}. */
export interface LocalStackOptions {
  /** Data folder: SQLite database (unless DATABASE_URL), admin-token, runner/ work folder. */
  data: string;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 8787; 0 = ephemeral. */
  port?: number;
  /** Extra agent folders, after `<package root>/agents`. */
  agentsDirs: string[];
  /** Start a runner in this process (default true). */
  runner?: boolean;
  runnerLabels?: Labels;
  runnerCapacity?: number;
  /** Told to runners (default 5000 ms). */
  heartbeatIntervalMs?: number;
  /** A runner silent this long is offline and its jobs lost (default 20000 ms). */
  heartbeatTimeoutMs?: number;
  /** Hold each newly registered runner this long, ms (0/absent: off); the local runner is never held. */
  newRunnerHoldMs?: number;
  /** Where relative `input.repo` paths resolve for the local runner; default the current folder. */
  repoBaseDir?: string;
  /** Environment for DATABASE_URL and the gateway (ANTHROPIC_API_KEY, ...); default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Gateway configuration; default loadGatewayConfig(env). */
  gateway?: GatewayConfig;
  log: Logger;
}

/** A running store + server (+ runner) in this process. */
export interface LocalStack {
  store: Store;
  server: RunningServer;
  runner: RunningRunner | null;
  gateway: GatewayConfig;
  /** An admin API token for this server (the one in `<data>/admin-token`; a new one is written there if it is missing or stale). */
  adminToken: string;
  adminTokenFile: string;
  /** `sqlite` or `postgres`. */
  dialect: 'sqlite' | 'postgres';
  /** Stops the runner (cancelling its jobs), the server, then closes the store. Never throws. */
  close(): Promise<void>;
}

/** The first line `run --local` and `up` print, which model jobs will talk to: model-line.ts (routes taken into account). */
export { apiRoutesLine, describeModels, inheritedLongContextWarnings, modelLine, type ModelDescription } from './model-line.js';

/**
 * Log level from FLOTILLA_LOG_LEVEL (debug, info, warn, error, silent), else `dflt`.
 * @throws SettingError when it is set blank (core/setting-env.ts); CliError (exit 2) naming the levels for another word.
 */
export function logLevelFrom(env: NodeJS.ProcessEnv, dflt: LogLevel): LogLevel {
  const v = settingFromEnv(env, 'FLOTILLA_LOG_LEVEL')?.toLowerCase();
  if (v === undefined) return dflt;
  if (['debug', 'info', 'warn', 'error', 'silent'].includes(v)) return v as LogLevel;
  throw new CliError(`FLOTILLA_LOG_LEVEL must be one of debug, info, warn, error, silent; got ${JSON.stringify(v)}`, 2);
}

/**
 * A logger to `write` (stderr) at FLOTILLA_LOG_LEVEL or `dflt`; the lines of one event-loop
 * turn are written together (core/log-sink.ts: the server logs a line per model call).
 */
export function cliLogger(env: NodeJS.ProcessEnv, dflt: LogLevel, write: (line: string) => void): Logger {
  return createLogger(logLevelFrom(env, dflt), turnBatchedLines(write).line);
}

/**
 * Opens the store (PostgreSQL when DATABASE_URL is set, else SQLite in `data`), starts the
 * control plane with the shipped agents plus `agentsDirs` and the gateway configured from the
 * environment, and (unless `runner: false`) a runner in this process registered with a fresh
 * registration token, working in `<data>/runner`. Whatever started is stopped again when a
 * later step fails.
 * @throws Error from any step (data folder in use, port in use, bad agent file, ...).
 */
export async function startLocalStack(opts: LocalStackOptions): Promise<LocalStack> {
  const env = opts.env ?? process.env;
  const data = resolve(opts.data);
  // flotilla.yaml (or FLOTILLA_CONFIG) `gateway:` section over the environment (gateway/config-file.ts)
  const gateway = opts.gateway ?? loadGatewaySettings(env, loadGatewayConfig);
  const agentsDirs = [join(packageRoot(), 'agents'), ...opts.agentsDirs.map((d) => resolve(d))];
  // checked again by the server (env-check.ts); here so a bad value stops before the database is made
  treeLimitsFromEnv(env);
  // Set blank (a unit file's `DATABASE_URL=${DB}` with DB unset) it is refused, not read as unset:
  // that started a SQLite control plane of its own beside the PostgreSQL replicas (fresh-tester finding).
  const databaseUrl = settingFromEnv(env, 'DATABASE_URL');
  if (databaseUrl !== undefined) assertDatabaseUrl(databaseUrl);
  // The data folder and the runner's, made here first: the store's and the runner's own
  // recursive mkdir (Node's) would spin for ever on a path such as /proc/nope (core/make-dir.ts).
  await makeDir(data, 0o700);
  if (opts.runner !== false) await makeDir(join(data, 'runner'));
  const store = await openStore({ ...(databaseUrl !== undefined ? { databaseUrl } : {}), dataDir: data, log: opts.log.child({ part: 'store' }) });
  let server: RunningServer | null = null;
  let runner: RunningRunner | null = null;
  /** Revokes the local runner's registration token (set once it exists). */
  let revokeRegistration = (): Promise<void> => Promise.resolve();
  const close = async () => {
    try {
      await revokeRegistration();
    } catch (err) {
      opts.log.warn('registration token not revoked', { error: String(err) });
    }
    // The whole stop within `docker stop`'s 10 s: the calls in flight get what is left of
    // STOP_TOTAL_MS once the runner has stopped its jobs (at most 7 s), at least 1 s.
    const began = Date.now();
    try {
      await runner?.stop({ cancelJobs: true });
    } catch (err) {
      opts.log.warn('runner did not stop cleanly', { error: String(err) });
    }
    try {
      await server?.close({ drainMs: Math.max(1000, STOP_TOTAL_MS - (Date.now() - began)) });
    } catch (err) {
      opts.log.warn('server did not stop cleanly', { error: String(err) });
    }
    try {
      await store.close();
    } catch (err) {
      opts.log.warn('store did not close cleanly', { error: String(err) });
    }
  };
  try {
    server = await startServer({
      store,
      dataDir: data,
      host: opts.host ?? '127.0.0.1',
      port: opts.port ?? 8787,
      agentsDirs,
      gateway,
      heartbeatIntervalMs: opts.heartbeatIntervalMs,
      heartbeatTimeoutMs: opts.heartbeatTimeoutMs,
      ...(opts.newRunnerHoldMs ? { newRunnerHoldMs: opts.newRunnerHoldMs } : {}),
      log: opts.log.child({ part: 'server' }),
    });
    const adminTokenFile = join(data, 'admin-token');
    // null: the store has tokens but the file is missing or stale (e.g. another database):
    // make a new admin token and put it where the CLI looks.
    let adminToken = server.adminToken;
    if (!adminToken) {
      adminToken = await createApiToken(store, 'flotilla-local', 'admin', Date.now());
      await makeDir(data, 0o700);
      await writeFile(adminTokenFile, adminToken + '\n', { mode: 0o600 });
      await chmod(adminTokenFile, 0o600);
      // Say so: this replaces a token someone may have revoked on purpose (whoever runs `up` owns
      // the store, so it may), and on a shared database every such start adds an admin token.
      opts.log.warn('no valid admin token in the data folder (missing, revoked, or of another database): created API token "flotilla-local" (admin) and wrote it there; revoke old ones with flotilla tokens revoke', { file: adminTokenFile });
    }
    if (opts.runner !== false) {
      const labels = opts.runnerLabels ?? {};
      // Revoked once the runner has started: it registers with it only the first time (later
      // starts present the stored credential), and a live token nobody uses was left in
      // `runners token list` for its 10 minutes after every start (fresh-tester finding).
      const registration = await registrationToken(store, labels, 10 * 60_000, Date.now());
      revokeRegistration = () => store.revokeRegistrationToken(registration.id, Date.now()).then(() => undefined);
      // The data folder's own runner: the same registration on any port, the same process
      // identity after a crash on this host (local-runner-identity.ts).
      const workDir = join(data, 'runner');
      await adoptLocalCredential(workDir, server.url, store);
      try {
        runner = await startRunner({
          serverUrl: server.url,
          registrationToken: registration.token,
          workDir,
          instance: await localRunnerInstance(workDir),
          // Jobs must not read the admin token nor the database (the runner's own work folder stays visible).
          hidePaths: [adminTokenFile, ...(databaseUrl !== undefined ? [] : ['flotilla.db', 'flotilla.db-wal', 'flotilla.db-shm', 'flotilla.db-journal'].map((f) => join(data, f)))].filter((f) => existsSync(f)),
          name: runnerNameFrom(`${hostname().slice(0, 57)}-local`),
          labels,
          capacity: opts.runnerCapacity ?? 1,
          repoBaseDir: opts.repoBaseDir ?? process.cwd(),
          log: opts.log.child({ part: 'runner' }),
        });
      } catch (err) {
        // the runner's own advice ("start it with a new registration token") fits `flotilla runner`,
        // not this process's runner, which `up` registers itself (fresh-tester finding)
        if (err instanceof AuthError && err.code === 'runner_revoked') {
          throw new AuthError(`this data folder's local runner was revoked (flotilla runners revoke): it cannot connect again; to run a local runner again, delete ${credentialPath(workDir)} and start flotilla up again (or start it with --no-runner)`, err.code);
        }
        throw err;
      }
      await revokeRegistration();
      revokeRegistration = () => Promise.resolve(); // done: close() need not write it again
      // The new-runner hold is for runners joining from elsewhere, not this process's own.
      if (opts.newRunnerHoldMs) await store.setRunnerHold(runner.runnerId, null);
    }
    return { store, server, runner, gateway, adminToken, adminTokenFile, dialect: store.dialect, close };
  } catch (err) {
    await close();
    throw err;
  }
}

