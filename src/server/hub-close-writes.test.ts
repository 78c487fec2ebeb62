// A runner that stops with its server (`flotilla up`: the local runner's connection closes
// first) is written down as disconnected before the server lets the store close: the hub's
// close waits for the store writes of connections that closed on their own. A fresh-user run
// on PostgreSQL logged "recording runner history failed ... driver has already been destroyed"
// on every stop, and the runner's `disconnected` line was lost.
import { expect, it } from 'vitest';
import { FakeRunner, startTestServer } from './test-helpers.js';

it("a runner closing just before the server stops still gets its 'disconnected' history line", async () => {
  const t = await startTestServer();
  const r = await FakeRunner.start(t, { name: 'leaving' });
  await r.hello({ name: 'leaving' });
  const runner = (await t.store.listRunners()).find((x) => x.name === 'leaving')!;
  const lines: string[] = [];
  // the history write is slow (a loaded database) and refused once the server has closed, as a closed pool refuses it
  let closed = false;
  let entered!: () => void;
  const writing = new Promise<void>((res) => (entered = res));
  const record = t.store.recordRunnerEvent.bind(t.store);
  t.store.recordRunnerEvent = async (id, e, now) => {
    if (e.kind === 'disconnected') entered();
    await new Promise((res) => setTimeout(res, 200));
    if (closed) throw new Error('driver has already been destroyed');
    lines.push(e.kind);
    return record(id, e, now);
  };
  r.close();
  await writing; // the server saw the runner go and is writing it down: now it stops
  await t.server.close();
  closed = true;
  expect(lines).toContain('disconnected');
  expect((await t.store.listRunnerEvents(runner.id, 10)).map((e) => e.kind)).toContain('disconnected');
  await t.close();
});
