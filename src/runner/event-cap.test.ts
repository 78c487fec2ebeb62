import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AgentDefinition, MAX_EVENT_DATA_BYTES, type JobAssignment } from '../protocol/index.js';
import { startFakeFleet, type FakeFleet } from './testdata/fake-fleet.js';

/**
 * The per-event size cap on the runner (protocol/events.ts MAX_EVENT_DATA_BYTES): a harness
 * writing a 6 MB message uploads a `message` event cut to the cap with a marker, never the 6 MB.
 */
let fleet: FakeFleet;
beforeEach(async () => {
  fleet = await startFakeFleet('flotilla-event-cap-', { name: 'cap-runner', graceMs: 300 });
});
afterEach(() => fleet.close());

const sh = (jobId: number, script: string): JobAssignment => ({
  jobId,
  rootId: jobId,
  attempt: 1,
  agent: AgentDefinition.parse({ name: 'sh', harness: 'command', command: ['sh', '-c', script], promptText: 'p' }),
  input: {},
  token: `flj_cap${jobId}secretvalue`,
  resumeSessionId: null,
});

describe('event size cap on the runner', () => {
  it('a 6 MB assistant message is uploaded cut to the cap, with a marker naming what was cut', async () => {
    const { cp } = fleet;
    // The command harness's event protocol (docs/command-harness.md): one JSON event per line, up to 8 MiB.
    const script = `printf '{"type":"message","data":{"role":"assistant","text":"'; head -c 6000000 /dev/zero | tr '\\0' a; printf '"}}\\n'; echo small`;
    cp.send({ type: 'job.assign', assignment: sh(1, script) });
    await cp.waitFor(() => cp.finished(1) !== undefined, 20_000, 'the job to finish');
    const messages = cp.events(1).filter((e) => e.type === 'message') as Array<{ type: 'message'; data: { role: string; text: string } }>;
    const big = messages.find((e) => e.data.text.startsWith('aaaa'));
    expect(big?.data.role).toBe('assistant');
    expect(big?.data.text).toMatch(/^a+… \[truncated 5\.5 MiB\]$/);
    expect(Buffer.byteLength(JSON.stringify(big?.data))).toBeLessThanOrEqual(MAX_EVENT_DATA_BYTES);
    expect(Buffer.byteLength(JSON.stringify(big?.data))).toBeGreaterThan(MAX_EVENT_DATA_BYTES - 100);
    expect(cp.events(1).some((e) => e.type === 'log' && e.data.line === 'small')).toBe(true);
    // No frame carried the 6 MB.
    const frames = cp.frames.filter((f) => f.type === 'job.events').map((f) => Buffer.byteLength(JSON.stringify(f)));
    expect(Math.max(...frames)).toBeLessThan(MAX_EVENT_DATA_BYTES + 64 * 1024);
    expect(cp.finished(1)?.data.status).toBe('succeeded');
  });
});
