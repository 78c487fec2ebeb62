import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AgentDefinition, type JobAssignment } from '../protocol/index.js';
import { startFakeFleet, type FakeFleet } from './testdata/fake-fleet.js';

// `flotilla up` (cli/local/stack.ts): a job of the local runner must not read `<data>/admin-token`
// nor the SQLite files: RunnerOptions.hidePaths covers files (/dev/null) and folders (tmpfs).
let fleet: FakeFleet;
let data: string;

beforeEach(async () => {
  data = mkdtempSync(join(tmpdir(), 'flotilla-hide-paths-'));
  writeFileSync(join(data, 'admin-token'), 'fla_adminsecretvalue\n', { mode: 0o600 });
  writeFileSync(join(data, 'flotilla.db'), 'SQLite format 3 secretrows', { mode: 0o600 });
  mkdirSync(join(data, 'private'));
  writeFileSync(join(data, 'private', 'x'), 'folder secret');
  writeFileSync(join(data, 'visible'), 'plain');
  fleet = await startFakeFleet('flotilla-hide-', {
    name: 'hide-runner',
    graceMs: 1000,
    hidePaths: [join(data, 'admin-token'), join(data, 'flotilla.db'), join(data, 'private'), join(data, 'flotilla.db-wal')],
  });
});

afterEach(async () => {
  await fleet.close();
  rmSync(data, { recursive: true, force: true });
});

function probeJob(jobId: number, readOnly: boolean): JobAssignment {
  const script = [
    'try() { if v=$(cat "$1" 2>/dev/null) && [ -n "$v" ]; then echo "READ $2: $v"; else echo "DENIED $2"; fi; }',
    'try "$0/admin-token" token',
    'try "$0/flotilla.db" db',
    'try "$0/private/x" folder',
    'if umount "$0/admin-token" 2>/dev/null; then echo "UNMOUNTED"; else echo "DENIED umount"; fi',
    'try "$0/admin-token" token-after-umount',
    'try "$0/visible" visible',
  ].join('; ');
  return {
    jobId,
    rootId: jobId,
    attempt: 1,
    agent: AgentDefinition.parse({ name: 'snoop', harness: 'command', command: ['/bin/sh', '-c', `{ ${script}; } > "$HOME/probe.txt"`, data], promptText: 'x', readOnly }),
    input: {},
    token: `flj_snooptoken${jobId}secretvalue`,
    resumeSessionId: null,
  };
}

async function run(a: JobAssignment): Promise<string[]> {
  fleet.cp.send({ type: 'job.assign', assignment: a });
  await fleet.cp.waitFor(() => fleet.cp.finished(a.jobId, a.attempt) !== undefined, 30_000, `job ${a.jobId} to finish`);
  expect(fleet.cp.finished(a.jobId, a.attempt)!.data.status).toBe('succeeded');
  return readFileSync(join(fleet.tmp, 'work', 'homes', `job-${a.jobId}`, 'probe.txt'), 'utf8').trim().split('\n');
}

describe('extra paths hidden from jobs (RunnerOptions.hidePaths)', () => {
  it('a job cannot read the hidden files and folder (a missing one is skipped); other files stay readable; the runner still can', async () => {
    expect(await run(probeJob(1, false))).toEqual(['DENIED token', 'DENIED db', 'DENIED folder', 'DENIED umount', 'DENIED token-after-umount', 'READ visible: plain']);
    expect(readFileSync(join(data, 'admin-token'), 'utf8')).toBe('fla_adminsecretvalue\n');
  });

  it('also under read-only mode', async () => {
    expect(await run(probeJob(2, true))).toEqual(['DENIED token', 'DENIED db', 'DENIED folder', 'DENIED umount', 'DENIED token-after-umount', 'READ visible: plain']);
  });
});
