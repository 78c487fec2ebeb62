import { describe, expect, it } from 'vitest';
import type { Store } from '../../store/types.js';
import { RECEIVER_CACHE_MS, cachedReceiver, forgetReceivers } from './receiver-cache.js';

type Credentials = NonNullable<Awaited<ReturnType<Store['findReceiverCredentials']>>>;
const T = 1_800_000_000_000;

/** A store whose findReceiverCredentials answers only when `answer()` is called; counts its calls. */
function slowStore() {
  const waiting: ((v: Credentials | null | Error) => void)[] = [];
  let calls = 0;
  const store = {
    findReceiverCredentials: (name: string) => {
      calls++;
      return new Promise<Credentials | null>((resolve, reject) =>
        waiting.push((v) => (v instanceof Error ? reject(v) : resolve(v === null ? null : { ...v, receiver: { ...v.receiver, name } }))),
      );
    },
  } as unknown as Store;
  const row = { receiver: { id: 1, name: 'gh', provider: 'github', auth: 'hmac', keyExpr: null, summaryExpr: null, fallbackTaskId: null, policies: {}, createdAt: T }, secret: 's', tokenHash: null } as unknown as Credentials;
  return { store, calls: () => calls, answer: (v: Credentials | null | Error = row) => waiting.shift()!(v) };
}

describe('receiver cache (receiver-cache.ts)', () => {
  it('callers arriving during a read share it: one store call, one answer for all; then cached until RECEIVER_CACHE_MS', async () => {
    const s = slowStore();
    const all = Promise.all([1, 2, 3].map(() => cachedReceiver(s.store, 'gh', T)));
    expect(s.calls()).toBe(1);
    s.answer();
    const got = await all;
    expect(got.map((g) => g?.receiver.id)).toEqual([1, 1, 1]);
    expect((await cachedReceiver(s.store, 'gh', T + RECEIVER_CACHE_MS - 1))?.secret).toBe('s');
    expect(s.calls()).toBe(1);
    // Expired: read again.
    const again = cachedReceiver(s.store, 'gh', T + RECEIVER_CACHE_MS);
    expect(s.calls()).toBe(2);
    s.answer();
    expect((await again)?.receiver.id).toBe(1);
  });

  it('a forget during a read: the read still answers its callers but is not kept; a failed read is not kept either', async () => {
    const s = slowStore();
    const first = cachedReceiver(s.store, 'gh', T);
    forgetReceivers(s.store); // e.g. the receiver was deleted meanwhile
    s.answer();
    expect((await first)?.receiver.id).toBe(1);
    // Not kept: the next delivery reads again; a caller after the forget does not share a read from before it.
    const a = cachedReceiver(s.store, 'gh', T + 1);
    const b = cachedReceiver(s.store, 'gh', T + 1);
    expect(s.calls()).toBe(2);
    s.answer();
    expect([(await a)?.receiver.id, (await b)?.receiver.id]).toEqual([1, 1]);
    // That read (after the forget) is kept.
    await cachedReceiver(s.store, 'gh', T + 2);
    expect(s.calls()).toBe(2);

    const f = slowStore();
    const failing = cachedReceiver(f.store, 'gh', T);
    f.answer(new Error('connection lost'));
    await expect(failing).rejects.toThrow('connection lost');
    const retry = cachedReceiver(f.store, 'gh', T);
    expect(f.calls()).toBe(2);
    f.answer(null);
    expect(await retry).toBeNull();
    // A miss is never kept.
    const miss = cachedReceiver(f.store, 'gh', T);
    expect(f.calls()).toBe(3);
    f.answer();
    expect((await miss)?.receiver.id).toBe(1);
  });
});
