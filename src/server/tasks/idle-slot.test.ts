import { afterAll, describe, expect, it } from 'vitest';
import type { Job, RunnerDetail, RunnerList } from '../../protocol/index.js';
import { createTestDatabase } from '../../store/test-pg.js';
import type { TaskRow } from '../../store/types.js';
import { FakeRunner, startTestServer, type TestServer } from '../test-helpers.js';
import { until } from '../hooks/hook-test-util.js';

// Issue 7 idle timeout: after a reply the task keeps its runner slot for the agent's idle time
// (gpu-job: the default 600 s); its next turn takes that slot at once; other jobs wait until the
// idle time has passed; `suspend` frees the slot at once. One runner with ONE slot, real server
// (HTTP + WebSocket), on SQLite and PostgreSQL.

const pg = await createTestDatabase();
afterAll(async () => {
  await pg?.drop();
});
const engines = [{ name: 'SQLite', url: undefined as string | undefined }, ...(pg ? [{ name: 'PostgreSQL', url: pg.url }] : [])];
const IDLE_MS = 600_000; // gpu-job has no limits.idleSeconds: the default 600 s

describe.each(engines)('task idle slot ($name)', ({ url }) => {
  it('keeps the slot for the next turn, frees it after the idle time, and at once on suspend', async () => {
    const t: TestServer = await startTestServer({ ...(url ? { databaseUrl: url } : {}), taskPollMs: 100, dispatchIntervalMs: 200 });
    const r = await FakeRunner.start(t, { name: 'one-slot', labels: { gpu: 'a100' }, capacity: 1 });
    try {
      await r.hello({ name: 'one-slot', labels: { gpu: 'a100' }, capacity: 1 });
      const task = async (id: number) => (await t.store.getTask(id))!;
      /** Ends the job as the runner would (succeeded, with a session), then waits for the task to be idle. */
      const reply = async (taskId: number, jobId: number, session: string): Promise<TaskRow> => {
        const job = (await t.store.getJob(jobId))!;
        expect(await t.store.transitionJob(jobId, job.attempt, ['assigned', 'running'], 'succeeded', Date.now(), { sessionId: session, endReason: 'done' })).not.toBeNull();
        return until(async () => {
          const x = await task(taskId);
          return x.status === 'idle' && x.currentJobId === null ? x : null;
        }, 15_000, `task ${taskId} idle`);
      };
      /** [slotsUsed, keptSlots] of the runner in `GET /api/runners` and `GET /api/runners/{id}`. */
      const runnerSlots = async () => {
        const listed = ((await (await t.api('/api/runners')).json()) as RunnerList).runners.find((x) => x.id === r.runnerId)!;
        const shown = ((await (await t.api(`/api/runners/${r.runnerId}`)).json()) as RunnerDetail).runner;
        return { listed: [listed.slotsUsed, listed.keptSlots], shown: [shown.slotsUsed, shown.keptSlots] };
      };
      const plainJob = async () => (await (await t.api('/api/jobs', { json: { agent: 'gpu-job', input: { n: 1 } } })).json()) as Job;

      // Turn 1 runs on the only runner; after its reply the task keeps the slot for 600 s.
      const created = (await (await t.api('/api/tasks', { json: { agent: 'gpu-job', title: 'idle', prompt: 'one' } })).json()) as { id: number };
      const a1 = (await r.next('job.assign', () => true, 10_000)).assignment;
      const before = Date.now();
      const idle1 = await reply(created.id, a1.jobId, 'sess-1');
      expect([idle1.runnerId, idle1.workspaceJobId, idle1.sessionId]).toEqual([r.runnerId, a1.jobId, 'sess-1']);
      expect(idle1.slotUntil).toBeGreaterThanOrEqual(before + IDLE_MS);
      expect(idle1.slotUntil).toBeLessThanOrEqual(Date.now() + IDLE_MS);
      expect(await t.store.listTaskSlots(Date.now())).toEqual([{ taskId: created.id, runnerId: r.runnerId, workspace: a1.jobId, until: idle1.slotUntil }]);
      const viewed = (await (await t.api(`/api/tasks/${created.id}`)).json()) as { task: { slotHeldUntil: string | null }; runnerName: string | null };
      expect(viewed.task.slotHeldUntil).toBe(new Date(idle1.slotUntil!).toISOString());
      expect(viewed.runnerName).toBe('one-slot'); // what `tasks show` names the runner by
      // ...and the runner views say so: no job holds a slot, one is kept (it read `0/1` while jobs waited: a fresh tester)
      const keptNow = [{ taskId: created.id, until: new Date(idle1.slotUntil!).toISOString() }];
      expect(await runnerSlots()).toEqual({ listed: [0, keptNow], shown: [0, keptNow] });

      // Another job does not get the kept slot.
      const p1 = await plainJob();
      expect(await r.none('job.assign', 1500)).toBe(true);
      expect((await t.store.getJob(p1.id))?.status).toBe('queued');
      // ...and its waiting status says why: the slot kept by the task (FX2), once.
      const kept = `waiting: runner one-slot: slot kept by task ${created.id} until ${new Date(idle1.slotUntil!).toISOString()} (tasks suspend ${created.id} frees it)`;
      const notes = async () => (await t.store.listEvents(p1.id, 0, 100)).flatMap((e) => (e.type === 'status' && /slot kept by/.test(e.data.message ?? '') ? [e.data.message] : []));
      expect(await until(async () => ((await notes()).length ? notes() : null), 10_000, 'kept-slot note')).toEqual([kept]);

      // The task's next prompt within the idle time: its turn takes the kept slot straight away.
      expect((await t.api(`/api/tasks/${created.id}/send`, { json: { prompt: 'two' } })).status).toBe(200);
      const a2 = (await r.next('job.assign', () => true, 10_000)).assignment;
      expect(a2.jobId).not.toBe(p1.id);
      expect([a2.resumeSessionId, a2.workspaceJobId]).toEqual(['sess-1', a1.jobId]);
      expect((await t.store.listTaskSlots(Date.now())).map((x) => x.taskId)).toEqual([created.id]); // counted once, as the running turn
      expect(await runnerSlots()).toEqual({ listed: [1, []], shown: [1, []] });
      const idle2 = await reply(created.id, a2.jobId, 'sess-1');
      expect(await r.none('job.assign', 1000)).toBe(true); // kept again after turn 2

      // After the idle time the slot is free for other jobs (idle time shortened to 1.5 s from now).
      const shortUntil = Date.now() + 1500;
      await t.store.updateTask(created.id, null, { slotUntil: shortUntil }, Date.now());
      const a3 = (await r.next('job.assign', () => true, 10_000)).assignment;
      expect(a3.jobId).toBe(p1.id);
      expect(Date.now()).toBeGreaterThanOrEqual(shortUntil);
      expect(idle2.slotUntil).toBeGreaterThan(shortUntil);
      await t.store.transitionJob(p1.id, null, ['assigned'], 'succeeded', Date.now(), { endReason: 'done' });

      // Turn 3, then suspend: the kept slot is released at once.
      expect((await t.api(`/api/tasks/${created.id}/send`, { json: { prompt: 'three' } })).status).toBe(200);
      const a4 = (await r.next('job.assign', () => true, 10_000)).assignment;
      await reply(created.id, a4.jobId, 'sess-1');
      const p2 = await plainJob();
      expect(await r.none('job.assign', 1500)).toBe(true);
      const sus = await t.api(`/api/tasks/${created.id}/suspend`, { method: 'POST' });
      expect(sus.status).toBe(200);
      expect((await task(created.id)).slotUntil).toBeNull();
      expect(((await sus.json()) as { slotHeldUntil: string | null }).slotHeldUntil).toBeNull();
      const a5 = (await r.next('job.assign', () => true, 10_000)).assignment;
      expect(a5.jobId).toBe(p2.id);
      // Workspace and session are kept for a later resume.
      expect([(await task(created.id)).sessionId, (await task(created.id)).workspaceJobId]).toEqual(['sess-1', a1.jobId]);
    } finally {
      await r.close();
      await t.close();
    }
  }, 90_000);
});
