import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AgentDefinition, type JobAssignment } from '../protocol/index.js';
import { credentialPath } from './credential.js';
import { startFakeFleet, type FakeFleet } from './testdata/fake-fleet.js';
import type { FakeControlPlane } from './testdata/fake-control-plane.js';

// Security finding 1c (issue 5): a job's processes (same user as the runner: root here) must
// not reach the runner's credential — neither the file, nor through the runner's /proc entries.
let fleet: FakeFleet;
let tmp: string;
let cp: FakeControlPlane;

beforeEach(async () => {
  fleet = await startFakeFleet('flotilla-secret-', { name: 'secret-runner', graceMs: 1000 });
  ({ tmp, cp } = fleet);
});

afterEach(() => fleet.close());

/** A command-harness job that tries every way to the credential and writes what it got to $HOME/probe.txt. */
function probeJob(jobId: number, readOnly: boolean): JobAssignment {
  const cred = credentialPath(join(tmp, 'work'));
  const script = [
    'out="$HOME/probe.txt"',
    'try() { if v=$(cat "$1" 2>/dev/null) && [ -n "$v" ]; then echo "READ $2: $v"; else echo "DENIED $2"; fi; }',
    'try "$0" file',
    'try ../../credential.json legacy',
    'try "/proc/$1/root$0" runner-root',
    'try "/proc/$1/environ" runner-environ',
    'if umount "$(dirname "$0")" 2>/dev/null; then echo "UNMOUNTED"; else echo "DENIED umount"; fi',
    'try "$0" file-after-umount',
  ].join('; ');
  return {
    jobId,
    rootId: jobId,
    attempt: 1,
    agent: AgentDefinition.parse({ name: 'snoop', harness: 'command', command: ['/bin/sh', '-c', `{ ${script}; } > "$HOME/probe.txt"`, cred, String(process.pid)], promptText: 'x', readOnly }),
    input: {},
    token: `flj_snooptoken${jobId}secretvalue`,
    resumeSessionId: null,
  };
}

async function run(a: JobAssignment): Promise<string[]> {
  cp.send({ type: 'job.assign', assignment: a });
  await cp.waitFor(() => cp.finished(a.jobId, a.attempt) !== undefined, 30_000, `job ${a.jobId} to finish`);
  expect(cp.finished(a.jobId, a.attempt)!.data.status).toBe('succeeded');
  return readFileSync(join(tmp, 'work', 'homes', `job-${a.jobId}`, 'probe.txt'), 'utf8').trim().split('\n');
}

describe('the runner credential is out of the jobs reach', () => {
  it('a command-harness job cannot cat the credential, nor get it via the runner /proc, nor unmount the cover', async () => {
    const cred = credentialPath(join(tmp, 'work'));
    expect(JSON.parse(readFileSync(cred, 'utf8'))).toMatchObject({ runnerId: 7 }); // the runner itself can
    expect(await run(probeJob(1, false))).toEqual([
      'DENIED file',
      'DENIED legacy',
      'DENIED runner-root',
      'DENIED runner-environ',
      'DENIED umount',
      'DENIED file-after-umount',
    ]);
  });

  it('also under read-only mode (both wrappers compose)', async () => {
    const lines = await run(probeJob(2, true));
    expect(lines.filter((l) => !l.startsWith('DENIED'))).toEqual([]);
    expect(lines).toHaveLength(6);
  });
});
