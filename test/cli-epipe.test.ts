import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { BIN } from './helpers.js';

// A fresh user's `flotilla runners show 1 | head -1` crashed 3 times in 5: `Error: write EPIPE`,
// "Unhandled 'error' event" and a stack trace, exit 1.
describe('flotilla writing to a pipe its reader closed', () => {
  it('ends quietly with 141 (128 + SIGPIPE), no stack trace', async () => {
    const child = spawn(process.execPath, [BIN, 'jobs', '--help'], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy(); // the reader is gone before the command writes anything
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    expect(stderr).not.toMatch(/EPIPE|Unhandled|at /);
    expect(code).toBe(141);
  });
});
