// A benchmark's child processes (fake upstream, gateways, proxies): each prints one line when it
// is ready (its port, ...) and, on SIGUSR2, `cpu <µs>` (its process.cpuUsage so far).
import { spawn } from 'node:child_process';

const children = [];
process.on('exit', () => children.forEach((c) => c.kill('SIGKILL')));

/**
 * Spawns `node [nodeArgs] args` (killed when this process exits).
 * @returns once it printed its first line: { p (the ChildProcess), line, cpu() → its CPU µs so far }.
 * @throws (rejects) when it exits before printing one.
 */
export function startChild(args, nodeArgs = []) {
  return new Promise((res, rej) => {
    const p = spawn(process.execPath, [...nodeArgs, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(p);
    let out = '';
    const waiting = [];
    let first = null;
    p.stdout.on('data', (d) => {
      out += d;
      let i;
      while ((i = out.indexOf('\n')) !== -1) {
        const line = out.slice(0, i).trim();
        out = out.slice(i + 1);
        if (!line) continue;
        if (first === null) {
          first = line;
          res({ p, line, cpu: () => new Promise((r) => (waiting.push(r), p.kill('SIGUSR2'))) });
        } else if (line.startsWith('cpu ')) waiting.shift()?.(Number(line.slice(4)));
      }
    });
    p.on('exit', (code) => first === null && rej(new Error(`${args.join(' ')} exited ${code}`)));
  });
}
