// The runner's lease on its jobs (lease.ts) against the fake control plane: a server that can
// no longer hear the runner may give its jobs to another runner once its heartbeat timeout ran
// out, so the runner's job processes must be gone by then — and a shorter silence stops nothing.
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { WebSocket } from 'ws';
import { groupAlive } from './process.js';
import { assignment } from './testdata/fake-control-plane.js';
import { startFakeFleet, type FakeFleet } from './testdata/fake-fleet.js';

const FAKE_CLAUDE = fileURLToPath(new URL('./testdata/fake-claude.mjs', import.meta.url));
chmodSync(FAKE_CLAUDE, 0o755);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let fleet: FakeFleet | null = null;
afterEach(async () => {
  vi.restoreAllMocks();
  await fleet?.close();
  fleet = null;
});

/** A runner (grace 2000 ms) on a fake control plane heartbeating every `intervalMs` with the given timeout (null: an older server that does not say). */
async function start(heartbeatTimeoutMs: number | null, intervalMs = 100): Promise<FakeFleet> {
  fleet = await startFakeFleet('flotilla-lease-', { name: 'lease-runner', claudePath: FAKE_CLAUDE, graceMs: 2000 }, { heartbeatIntervalMs: intervalMs, heartbeatTimeoutMs });
  mkdirSync(join(fleet.tmp, 'repos', 'proj'), { recursive: true });
  writeFileSync(join(fleet.tmp, 'repos', 'proj', 'a.txt'), 'a\n');
  return fleet;
}

/** Runs job `id` (fake claude `scenario`), waits for its harness, returns its process group id. */
async function runJob(f: FakeFleet, id: number, scenario: string): Promise<number> {
  f.cp.send({ type: 'job.assign', assignment: assignment(id, `SCENARIO=${scenario}`, { repo: 'proj' }, {}, { maxTurns: 10_000 }) });
  await f.cp.waitFor(() => f.cp.events(id).some((e) => e.type === 'message' || e.type === 'tool.call'), 20_000, `job ${id} to run`);
  return (JSON.parse(readFileSync(join(f.tmp, 'work', 'homes', `job-${id}`, 'pids.json'), 'utf8')) as { leader: number }).leader;
}

/** Resolves with the time (epoch ms) group `pgid` was seen gone; rejects after `deadline` (epoch ms). */
async function goneBy(pgid: number, deadline: number): Promise<number> {
  while (groupAlive(pgid)) {
    if (Date.now() > deadline) throw new Error(`process group ${pgid} still alive ${Date.now() - deadline} ms after its deadline`);
    await sleep(5);
  }
  return Date.now();
}

describe('the lease on running jobs', () => {
  it('stops a job the server cannot hear about before the server may declare it lost, not before its time, and never ends it itself', async () => {
    const f = await start(1000); // lease: stop 700 ms after the last confirmed heartbeat, grace 200, gone by 900
    const pgid = await runJob(f, 1, 'sleep:ignore-term'); // only SIGKILL ends it
    await sleep(300); // heartbeats and pongs flowing
    const cut = Date.now();
    f.cp.silence(true); // no pong, no frame reaches the server any more
    await sleep(400);
    expect(groupAlive(pgid)).toBe(true); // a silence shorter than the lease stops nothing
    // The last heartbeat the server provably heard was sent before the cut: gone before cut + timeout.
    const gone = await goneBy(pgid, cut + 1000);
    expect(gone - cut).toBeGreaterThanOrEqual(500);

    f.cp.silence(false); // it had given up on the socket (three silent intervals): it reconnects
    await f.cp.waitFor(() => f.cp.hellos.length >= 2, 5000, 'the reconnect hello');
    // The attempt was given up: no longer reported once its processes are gone, and no
    // job.finished (the server decides: a retry, or lost).
    // (its slot goes once the attempt's clean-up after the kill is done: on a loaded machine a
    // heartbeat or two after the reconnect may still list it, so wait for one that does not)
    const beats = () => f.cp.frames.filter((m) => m.type === 'heartbeat');
    const n = beats().length;
    await f.cp.waitFor(() => beats().length > n && JSON.stringify(beats().at(-1)) === JSON.stringify({ type: 'heartbeat', running: [] }), 5000, 'a heartbeat without the given-up attempt');
    await f.cp.waitFor(() => f.cp.events(1).some((e) => e.type === 'progress' && e.data.phase === 'lost'), 5000, 'the last event');
    expect(f.cp.events(1).at(-1)).toMatchObject({ type: 'progress', data: { phase: 'lost', message: expect.stringMatching(/^runner gave the attempt up, its processes are gone: control plane unreachable: no heartbeat confirmed for \d+ ms \(its heartbeat timeout is 1000 ms\)/) } });
    expect(f.cp.finished(1)).toBeUndefined();
  });

  it('a blip shorter than the lease keeps the job: it runs to success', async () => {
    const f = await start(1000);
    const pgid = await runJob(f, 2, 'ticks:60'); // 1.2 s of output
    f.cp.silence(true);
    await sleep(250);
    f.cp.silence(false);
    await f.cp.waitFor(() => f.cp.finished(2) !== undefined, 20_000, 'job 2 to finish');
    expect(f.cp.finished(2)?.data.status).toBe('succeeded');
    expect(f.cp.events(2).filter((e) => e.type === 'message')).toHaveLength(60);
    expect(f.cp.events(2).some((e) => e.type === 'progress' && e.data.phase === 'lost')).toBe(false);
    expect(groupAlive(pgid)).toBe(false);
  });

  it('a runner frozen past its deadline kills its jobs on waking, before it sends anything', async () => {
    const f = await start(1000);
    const pgid = await runJob(f, 3, 'ticks:5000'); // prints every 20 ms: output is waiting when it wakes
    await sleep(300);
    const order: string[] = [];
    let frozen = false;
    const kill = process.kill.bind(process);
    vi.spyOn(process, 'kill').mockImplementation((pid: number, sig?: string | number) => {
      if (frozen && pid === -pgid && sig === 'SIGKILL') order.push('kill');
      return kill(pid, sig);
    });
    const send = WebSocket.prototype.send;
    vi.spyOn(WebSocket.prototype, 'send').mockImplementation(function (this: WebSocket, data: unknown, ...rest: unknown[]) {
      if (frozen && typeof data === 'string' && /^\{"type":"(job\.events|heartbeat|hello)"/.test(data)) order.push(JSON.parse(data).type as string);
      return (send as (...a: unknown[]) => void).call(this, data, ...rest);
    });
    // Freeze the whole process (as SIGSTOP does) 30 ms after a heartbeat, in a timer: the loop
    // then polls I/O before it runs the overdue timers, as a stopped runner does on SIGCONT (the
    // job's output waiting in its pipe is read, and uploaded at once unless the lease is checked).
    f.cp.onHeartbeat = () => {
      f.cp.onHeartbeat = null;
      setTimeout(() => {
        frozen = true;
        const until = Date.now() + 1300; // past the 1000 ms timeout
        while (Date.now() < until) {
          // frozen
        }
      }, 30);
    };
    await f.cp.waitFor(() => order.length >= 2, 5000, 'the runner to act after waking');
    expect(order[0]).toBe('kill'); // SIGKILL at once: no grace is left
    await goneBy(pgid, Date.now() + 500);
  });

  it('from an older server (no heartbeatTimeoutMs in welcome) assumes twice the interval', async () => {
    const f = await start(null, 300); // timeout 600: stop 420 ms after the last confirmation, grace 120, gone by 540
    const pgid = await runJob(f, 4, 'sleep:ignore-term');
    await sleep(700);
    const cut = Date.now();
    f.cp.silence(true);
    await sleep(150);
    expect(groupAlive(pgid)).toBe(true);
    await goneBy(pgid, cut + 600);
    f.cp.silence(false);
  });
});
