/**
 * Log lines written in batches. The server logs a line per model call (gateway/meter.ts): one
 * `write` each (a synchronous syscall for stderr on a file or pipe, Node's documented
 * behaviour on Linux) cost the gateway ~10 µs of CPU a call at 64 concurrent clients
 * (bench/gateway-cpu.bench.js, the gateway logging as `flotilla up` does). The lines of one event-loop turn
 * are joined and written once, at that turn's `setImmediate`, or at once when they pass
 * `maxChars`; lines keep their order. What is pending when the process exits (normally, on
 * `process.exit`, or after an uncaught exception) is written in the `exit` event; a SIGKILL
 * loses at most one turn's lines.
 */

/** Sinks with lines not written yet; flushed in the process's `exit` event. */
const pending = new Set<() => void>();
let exitHooked = false;

/**
 * Wraps `write` (which takes one or more whole lines, each ending in `\n`) so that the lines
 * of one event-loop turn reach it in one call.
 * @param maxChars past this many characters pending, they are written at once (default 64 Ki).
 * @returns the sink (takes one line, `\n` included) and `flush` (writes what is pending now).
 */
export function turnBatchedLines(write: (text: string) => void, maxChars = 65_536): { line: (text: string) => void; flush: () => void } {
  let buf = '';
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    pending.delete(flush);
    if (buf === '') return;
    const text = buf;
    buf = '';
    write(text);
  };
  const line = (text: string): void => {
    buf += text;
    if (buf.length >= maxChars) return flush();
    if (scheduled) return;
    scheduled = true;
    pending.add(flush);
    if (!exitHooked) {
      exitHooked = true;
      process.on('exit', () => {
        for (const f of [...pending]) f();
      });
    }
    setImmediate(flush).unref();
  };
  return { line, flush };
}
