#!/usr/bin/env node
// The `flotilla` command. The TypeScript sources are compiled to dist/ by `npm ci`
// (the `prepare` script) and by `npm run build`.
import { main } from '../dist/cli/main.js';

main(process.argv).then(
  (code) => { process.exitCode = code; },
  (err) => {
    process.stderr.write(`flotilla: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
