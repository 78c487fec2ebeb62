import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from './main.js';
import { recordingIO, waitFor, type RecordingIO } from './test-io.js';

/** A `flotilla up --port 0 --no-runner` running in this process for CLI tests (tests only). */
export interface LocalUp {
  /** Its data folder (fresh, SQLite; `<data>/admin-token` holds the admin token). */
  data: string;
  /** Its server's URL (`http://127.0.0.1:<port>`). */
  url: string;
  /** What `up` printed so far. */
  io: RecordingIO;
  /** Ctrl-C for `up`, then the environment as it was and the data folder removed. @returns up's exit code. */
  stop(): Promise<number>;
}

/**
 * Starts `flotilla up` in a fresh data folder (`prefix` names it), with the environment cleared
 * of FLOTILLA_*, DATABASE_URL, ANTHROPIC_API_KEY and what `alsoClear` picks, FLOTILLA_DATA set to
 * the folder and logs at warn; `before(data)` runs just before `up` (config files, keys).
 * @throws when `up` prints no server URL within 15 s.
 */
export async function startLocalUp(prefix: string, o: { alsoClear?: (name: string) => boolean; before?: (data: string) => Promise<void> } = {}): Promise<LocalUp> {
  const savedEnv = { ...process.env };
  const data = await mkdtemp(join(tmpdir(), prefix));
  for (const k of Object.keys(process.env)) if (k.startsWith('FLOTILLA_') || k === 'DATABASE_URL' || k === 'ANTHROPIC_API_KEY' || o.alsoClear?.(k)) delete process.env[k];
  process.env.FLOTILLA_DATA = data;
  process.env.FLOTILLA_LOG_LEVEL = 'warn';
  await o.before?.(data);
  const io = recordingIO();
  const done = main(['node', 'flotilla', 'up', '--port', '0', '--no-runner'], io);
  await waitFor(() => /press Ctrl-C/.test(io.out()) || io.err() !== '', 'flotilla up to start');
  const m = /server on (http:\/\/127\.0\.0\.1:\d+) \(SQLite in /.exec(io.out());
  if (!m) throw new Error(`up did not start: ${io.out()} ${io.err()}`);
  return {
    data,
    url: m[1]!,
    io,
    async stop() {
      io.signals.emit('SIGINT');
      const code = await done;
      process.env = { ...savedEnv };
      await rm(data, { recursive: true, force: true });
      return code;
    },
  };
}
