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

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/**
 * `text` with every control character but newline and tab shown as `\uXXXX`: what the CLI
 * prints comes partly from outside (issue titles and comments from a forge, agent messages,
 * tool output), and an escape sequence in it would otherwise drive the reader's terminal
 * (clear the screen, set the title, fake lines). JSON output is already escaped.
 */
export function terminalSafe(text: string): string {
  return text.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * The process's own stdout, stderr and signals. Stdout goes through {@link terminalSafe};
 * stderr carries the CLI's own spinner (`\r`, `ESC[K`) and messages.
 */
export function processIO(): CliIO {
  const stdout: OutStream = {
    write: (text: string) => process.stdout.write(terminalSafe(text)),
    get isTTY() {
      return process.stdout.isTTY;
    },
  };
  return { stdout, stderr: process.stderr, signals: process };
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
