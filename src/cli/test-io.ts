import { EventEmitter } from 'node:events';
import type { CliIO } from './io.js';

/** A {@link CliIO} that records what a command wrote, with signals the test can emit (tests only). */
export interface RecordingIO extends CliIO {
  out: () => string;
  err: () => string;
  signals: EventEmitter;
}

/** Makes a {@link RecordingIO}; `tty` sets `isTTY` on both streams. */
export function recordingIO(tty = false): RecordingIO {
  let out = '';
  let err = '';
  return {
    stdout: { write: (s: string) => (out += s), isTTY: tty },
    stderr: { write: (s: string) => (err += s), isTTY: tty },
    signals: new EventEmitter(),
    out: () => out,
    err: () => err,
  };
}

/** Waits until `check()` is true (polling every 20 ms), or fails after `ms` naming `what`. */
export async function waitFor(check: () => boolean, what: string, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** What {@link runCli} returns: the exit code and what the command wrote. */
export interface CliRun {
  code: number;
  out: string;
  err: string;
  io: RecordingIO;
}

/** Runs `flotilla ARGS...` through main() in this process with a fresh {@link RecordingIO} (tests only). */
export async function runCli(args: string[]): Promise<CliRun> {
  const { main } = await import('./main.js');
  const io = recordingIO();
  const code = await main(['node', 'flotilla', ...args], io);
  return { code, out: io.out(), err: io.err(), io };
}
