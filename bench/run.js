#!/usr/bin/env node
// `npm run bench`: runs every benchmark under bench/ in turn. Each prints its own figures as
// ratios against a baseline measured in the same run. Needs `npm run build` first (npm ci does it).
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const only = process.argv[2];
let failed = 0;
for (const f of readdirSync(here).filter((f) => f.endsWith('.bench.js')).sort()) {
  if (only && !f.includes(only)) continue;
  console.log(`\n## ${f}`);
  const r = spawnSync(process.execPath, [join(here, f)], { stdio: 'inherit' });
  if (r.status !== 0) failed++;
}
process.exitCode = failed ? 1 : 0;
