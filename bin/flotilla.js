#!/usr/bin/env node
// The `flotilla` command. The TypeScript sources are compiled to dist/ by `npm ci`
// (the `prepare` script) and by `npm run build`.

// Ctrl-C (or SIGTERM) before the command listens for it itself — while the modules load (about
// a second), or in a command that never does: said, and exit 130 (143) as Node's default would,
// which ended the process without a word. A command that listens (onInterrupt, cli/io.ts) handles it alone.
const fallback = (signal, code, said) => () => {
  if (process.listenerCount(signal) > 1) return;
  process.stderr.write(`\nflotilla: ${said}\n`);
  process.exit(code);
};
process.on('SIGINT', fallback('SIGINT', 130, 'interrupted'));
process.on('SIGTERM', fallback('SIGTERM', 143, 'terminated'));
// A library's process warning (pg's notice about `sslmode=require` is nine lines under
// "(node:PID) Warning:") is said as flotilla says things: `flotilla: warning: <its text>`, each
// line of it, without Node's --trace-warnings hint (the user did not run node).
process.removeAllListeners('warning');
process.on('warning', (w) => {
  const text = String(w.message ?? w).replace(/\n{2,}/g, '\n').trim();
  process.stderr.write(`flotilla: warning: ${text}\n`);
});
const { main } = await import('../dist/cli/main.js');

// A reader that stops early (`flotilla runners show r1 | head -1`) closes the pipe, and the
// next write fails with EPIPE, an 'error' event nobody handled: a stack trace and exit 1. End
// quietly instead, with the status of a Unix tool killed by SIGPIPE (128 + 13).
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err) => {
    if (err.code === 'EPIPE') process.exit(141);
    throw err;
  });
}

main(process.argv).then(
  (code) => { process.exitCode = code; },
  (err) => {
    process.stderr.write(`flotilla: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
