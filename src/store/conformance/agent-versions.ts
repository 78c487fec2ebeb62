import { expect, it } from 'vitest';
import { T, type Harness } from './harness.js';

const C1 = 'a'.repeat(40);
const C2 = '0123456789abcdef'.repeat(4);
const H = `sha256:${'f0'.repeat(32)}`;

/** Installed agent versions (store/agent-versions.ts, migration 0011). */
export function agentVersionTests(h: Harness): void {
  it('agent versions: each install adds a new version per agent; definition and script round-trip', async () => {
    const s = await h.open();
    const first = await s.installAgentVersions({ source: '/repo', ref: 'main', commit: C1 }, [
      { name: 'pr-reviewer', definition: { name: 'pr-reviewer', promptText: 'Review ✓' }, script: 'turns: []\n' },
      { name: 'code-explainer', definition: { name: 'code-explainer', limits: { maxTurns: 3 } }, script: null },
    ], T);
    expect(first.map((r) => [r.name, r.seq, r.version])).toEqual([
      ['pr-reviewer', 1, 'v1-aaaaaaaaaaaa'],
      ['code-explainer', 1, 'v1-aaaaaaaaaaaa'],
    ]);
    const second = await s.installAgentVersions({ source: '/repo', ref: null, commit: C2 }, [{ name: 'pr-reviewer', definition: { name: 'pr-reviewer', promptText: 'v2' }, script: null }], T + 5);
    expect(second[0]).toMatchObject({ name: 'pr-reviewer', seq: 2, version: 'v2-0123456789ab', ref: null, commit: C2, installedAt: T + 5 });
    const folder = await s.installAgentVersions({ source: '/folder', ref: null, commit: H }, [{ name: 'pr-reviewer', definition: { name: 'pr-reviewer' }, script: null }], T + 9);
    expect(folder[0]!.version).toBe('v3-f0f0f0f0f0f0');
    const all = await (await h.another(s)).listAgentVersions();
    expect(all.map((r) => `${r.name}@${r.version}`)).toEqual(['code-explainer@v1-aaaaaaaaaaaa', 'pr-reviewer@v1-aaaaaaaaaaaa', 'pr-reviewer@v2-0123456789ab', 'pr-reviewer@v3-f0f0f0f0f0f0']);
    expect(all[1]).toEqual({
      id: first[0]!.id, name: 'pr-reviewer', seq: 1, version: 'v1-aaaaaaaaaaaa', source: '/repo', ref: 'main', commit: C1,
      definition: { name: 'pr-reviewer', promptText: 'Review ✓' }, script: 'turns: []\n', installedAt: T,
    });
    expect((await s.listAgentVersions('code-explainer')).map((r) => r.definition)).toEqual([{ name: 'code-explainer', limits: { maxTurns: 3 } }]);
  });

  it('agent versions: concurrent installs from two instances get distinct seq numbers', async () => {
    const s = await h.open();
    const other = await h.another(s);
    await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 ? s : other).installAgentVersions({ source: '/r', ref: null, commit: C1 }, [{ name: 'x', definition: {}, script: null }], T + i)));
    expect((await s.listAgentVersions('x')).map((r) => r.seq)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('agent versions: bad input names the field and stores nothing', async () => {
    const s = await h.open();
    const ok = { source: '/r', ref: null, commit: C1 };
    await expect(s.installAgentVersions(ok, [], T)).rejects.toThrow(/agents must hold at least one/);
    await expect(s.installAgentVersions({ ...ok, commit: 'nope' }, [{ name: 'a', definition: {}, script: null }], T)).rejects.toThrow(/commit/);
    await expect(s.installAgentVersions(ok, [{ name: 'a', definition: {}, script: null }, { name: 'Bad', definition: {}, script: null }], T)).rejects.toThrow(/agents\.1\.name/);
    await expect(s.installAgentVersions(ok, [{ name: 'a', definition: {}, script: null }, { name: 'a', definition: {}, script: null }], T)).rejects.toThrow(/appears twice/);
    expect(await s.listAgentVersions()).toEqual([]);
  });
}
