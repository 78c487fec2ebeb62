import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FlotillaClient } from '../src/client/index.js';
import { runJob } from '../src/cli/run-job.js';
import { recordingIO } from '../src/cli/test-io.js';
import { BIN, ROOT, startPlane, tempDir, type Plane } from './helpers.js';

const LISTENING_PRELOAD = join(ROOT, 'test', 'fixtures', 'say-when-listening.mjs');

// Ctrl-C in the first second of `flotilla run --local` (a fresh tester's finding) ended the
// process with 130 and not a word: Node's default, before the command listened for it.
describe('Ctrl-C before a command listens for it', () => {
  it('while the modules load: "flotilla: interrupted" on stderr, exit 130; SIGTERM: "terminated", 143', async () => {
    for (const [signal, code, said] of [['SIGINT', 130, 'interrupted'], ['SIGTERM', 143, 'terminated']] as const) {
      const data = tempDir();
      try {
        // LISTENING_PRELOAD (node --import) says on fd 3 when bin/flotilla.js has its handlers, before it loads
        // the CLI's modules (~1 s). A fixed wait instead sent the signal, on a loaded machine,
        // before Node had run a line of the script: Node's own default, not what is tested here.
        const child = spawn(process.execPath, ['--import', LISTENING_PRELOAD, BIN, 'run', '--local', 'test-fixer', '{"repo":"examples/calc"}', '--data', data.path], { stdio: ['ignore', 'pipe', 'pipe', 'pipe'] });
        let out = '';
        let err = '';
        child.stdout!.on('data', (d) => (out += d));
        child.stderr!.on('data', (d) => (err += d));
        await new Promise((r) => child.stdio[3]!.once('data', r));
        child.kill(signal);
        const exit = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
        expect([exit, out, err]).toEqual([code, '', `\nflotilla: ${said}\n`]);
      } finally {
        data.cleanup();
      }
    }
  });
});

describe('Ctrl-C while `flotilla run` submits its job', () => {
  const dir = tempDir();
  let plane: Plane;
  beforeAll(async () => {
    plane = await startPlane({ dataDir: dir.path });
  });
  afterAll(async () => {
    await plane.close();
    dir.cleanup();
  });

  it('cancels the job once it exists (it was left queued: no handler yet), exit 130', async () => {
    const io = recordingIO();
    const client = new FlotillaClient({ url: plane.url, token: plane.adminToken });
    // The signal arrives while the job's POST is on its way (the server has it, the reply has not come back).
    const create = client.createJob.bind(client);
    client.createJob = async (req) => {
      const created = create(req);
      io.signals.emit('SIGINT');
      return created;
    };
    const code = await runJob(client, { agent: 'test-fixer', input: { repo: 'examples/calc' }, labels: { pool: 'nowhere' } }, { json: false, io });
    expect(code).toBe(130);
    const jobs = await plane.store.listJobs({ limit: 10 });
    expect(jobs.map((j) => j.status)).toEqual(['cancelled']);
    expect(io.err()).toBe(`\nflotilla: interrupted: cancelling job ${jobs[0]!.id} (run with --detach to leave jobs running)\nflotilla: job ${jobs[0]!.id} cancelled\n`);
  });
});
