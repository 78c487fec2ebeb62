import type { EventEmitter } from 'node:events';

/** Where a command writes. `isTTY` picks the spinner (TTY) or `… still` lines (not a TTY). */
export interface OutStream {
  write(text: string): unknown;
  isTTY?: boolean;
}

/**
 * The world a command runs in, so tests can drive `main()` without touching the process:
 * - `stdout` / `stderr`: output (default the process's);
 * - `signals`: emits `SIGINT` / `SIGTERM` (default `process`): Ctrl-C cancels an attached
 *   run, and stops `up` / `runner`.
 */
export interface CliIO {
  stdout: OutStream;
  stderr: OutStream;
  signals: Pick<EventEmitter, 'on' | 'off'>;
}

/** The process's own stdout, stderr and signals. */
export function processIO(): CliIO {
  return { stdout: process.stdout, stderr: process.stderr, signals: process };
}

/**
 * Calls `handler` once on the first SIGINT or SIGTERM from `io.signals`. Returns a function
 * that removes the listeners (then a further Ctrl-C gets Node's default: exit).
 */
export function onInterrupt(io: CliIO, handler: (signal: 'SIGINT' | 'SIGTERM') => void): () => void {
  let fired = false;
  const onInt = () => fire('SIGINT');
  const onTerm = () => fire('SIGTERM');
  function off() {
    io.signals.off('SIGINT', onInt);
    io.signals.off('SIGTERM', onTerm);
  }
  function fire(sig: 'SIGINT' | 'SIGTERM') {
    if (fired) return;
    fired = true;
    off();
    handler(sig);
  }
  io.signals.on('SIGINT', onInt);
  io.signals.on('SIGTERM', onTerm);
  return off;
}

/** Resolves at the first SIGINT or SIGTERM (long-running commands: `up`, `runner`). */
export function untilInterrupted(io: CliIO): Promise<'SIGINT' | 'SIGTERM'> {
  return new Promise((resolve) => onInterrupt(io, resolve));
}
