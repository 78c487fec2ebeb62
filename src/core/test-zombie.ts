import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';

/**
 * A zombie for tests (Linux): a child of `sh` that exits while `sh` has become `sleep` (exec),
 * which never reaps it. `sh` may reap it itself before the exec (a race): then it tries again,
 * at most 20 times. `parent` must be killed (SIGKILL) when done.
 * @throws Error when no zombie could be made.
 */
export async function makeZombie(): Promise<{ pid: number; parent: ChildProcess }> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const parent = spawn('/bin/sh', ['-c', 'true & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
    const pid = Number(await new Promise<string>((r) => parent.stdout!.once('data', (d: Buffer) => r(d.toString().trim()))));
    for (let i = 0; i < 100; i++) {
      let stat: string;
      try {
        stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      } catch {
        break; // reaped by sh before its exec: try again
      }
      if (stat.includes(') Z ')) return { pid, parent };
      await new Promise((r) => setTimeout(r, 10));
    }
    parent.kill('SIGKILL');
  }
  throw new Error('could not make a zombie process');
}
