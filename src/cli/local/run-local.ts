import { FlotillaClient } from '../../client/index.js';
import type { RunLocalParams } from '../context.js';
import { runJob } from '../run-job.js';
import { loadGatewayConfig } from '../../gateway/config.js';
import { loadGatewaySettings } from '../../gateway/config-file.js';
import { CliError } from '../options.js';
import { cliLogger, modelLine, startLocalStack } from './stack.js';
import { dataFolderInUse } from '../../store/lock.js';

/** The error of a data folder in use (`msg`: store/lock.ts's text), with what to do instead. */
const inUse = (msg: string) => new CliError(`${msg} (is \`flotilla up\` running on it? then use \`flotilla run\` without --local, or give --data another folder)`);

/**
 * `flotilla run --local`: starts a store in the data folder, a server on an ephemeral port of
 * 127.0.0.1 and a runner in this process (labels = the job's labels, so it matches), submits
 * the job through the client, follows it like `flotilla run`, then stops everything.
 * First line: which model the job talks to (stack.ts modelLine: offline scripted model, Claude
 * via the API, or the model routes of flotilla.yaml), on stdout, and a warning on stderr per
 * route to a provider that is not configured. Neither with --json: stdout stays the job's JSON
 * lines, and stderr is empty or, on a failure, the one JSON error line.
 * @throws CliError when the data folder is in use by another process.
 * @returns the exit code: 0 only when the job succeeded; 130 after Ctrl-C (job cancelled).
 */
export async function runLocal(p: RunLocalParams): Promise<number> {
  const { io, json } = p;
  const log = cliLogger(process.env, 'warn', (line) => void io.stderr.write(line));
  // flotilla.yaml (or FLOTILLA_CONFIG) `gateway:` section over the environment, as `flotilla up` reads it (stack.ts)
  const gateway = loadGatewaySettings(process.env, loadGatewayConfig);
  // A data folder in use is refused before anything is said (a fresh tester was told which
  // model a run that never started would use); the lock itself is taken by the store below.
  const busy = dataFolderInUse(p.data);
  if (busy) throw inUse(busy);
  // Said first, before the store, server and runner start (about a second). Not with --json:
  // stdout is the job's JSON lines and stderr, on a failure, exactly one JSON error line (README).
  if (!json) {
    const [first, ...warnings] = modelLine(gateway).split('\n');
    io.stdout.write(first + '\n');
    for (const w of warnings) io.stderr.write(w + '\n');
  }
  let stack;
  try {
    stack = await startLocalStack({
      data: p.data,
      host: '127.0.0.1',
      port: 0,
      agentsDirs: p.agentsDirs,
      runnerLabels: p.request.labels ?? {},
      ...(p.repoBaseDir !== undefined ? { repoBaseDir: p.repoBaseDir } : {}),
      gateway,
      log,
    });
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    if (/in use by process/.test(msg)) throw inUse(msg);
    throw err;
  }
  try {
    const client = new FlotillaClient({ url: stack.server.url, token: stack.adminToken });
    return await runJob(client, p.request, { json, io, failWhenPaused: true });
  } finally {
    await stack.close();
  }
}
