import { readdirSync, readFileSync } from 'node:fs';

/**
 * Finding and killing every process of a job, also those that left its process group
 * (`setsid`, double fork): the runner gives each harness an environment marker
 * (`FLOTILLA_RUN=<job>.<attempt>.<random>`, inherited by everything it starts unless a process
 * clears its environment) and walks /proc for it, plus every descendant (by parent pid) of a
 * marked process or of the job's process group. Linux only; elsewhere these find nothing.
 */

/** Name of the environment variable that marks a job's processes. */
export const RUN_MARKER_VAR = 'FLOTILLA_RUN';

interface ProcInfo {
  pid: number;
  ppid: number;
  pgrp: number;
  state: string;
}

function readProcs(): ProcInfo[] {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return [];
  }
  const out: ProcInfo[] = [];
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.push({ pid: Number(name), state: rest[0] ?? '', ppid: Number(rest[1]), pgrp: Number(rest[2]) });
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

function hasMarker(pid: number, entry: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(entry);
  } catch {
    return false;
  }
}

/**
 * Live (non-zombie) processes of a job: those whose environment holds `FLOTILLA_RUN=<marker>`,
 * members of process group `pgid` (when given), and all their descendants. Never this process.
 */
export function jobProcesses(marker: string, pgid?: number): number[] {
  const procs = readProcs().filter((p) => p.state !== 'Z' && p.state !== 'X' && p.pid !== process.pid);
  const entry = `${RUN_MARKER_VAR}=${marker}`;
  const found = new Set<number>();
  for (const p of procs) if ((pgid !== undefined && p.pgrp === pgid) || hasMarker(p.pid, entry)) found.add(p.pid);
  // Descendants by parent pid (a process that cleared its environment is still a child).
  let grew = true;
  while (grew) {
    grew = false;
    for (const p of procs) {
      if (!found.has(p.pid) && found.has(p.ppid)) {
        found.add(p.pid);
        grew = true;
      }
    }
  }
  return [...found];
}

/**
 * SIGKILLs every process of the job ({@link jobProcesses}) until none is left — processes
 * spawned while the kill is in progress are found by the next round. Gives up after
 * `timeoutMs` (a process the runner may not signal), returning the pids still alive.
 */
export async function killJobProcesses(marker: string, pgid?: number, timeoutMs = 5000): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pids = jobProcesses(marker, pgid);
    if (pids.length === 0) return [];
    if (Date.now() > deadline) return pids;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already, or not ours
      }
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}
