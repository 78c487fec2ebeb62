// `flotilla up`'s own runner registers with a registration token the stack makes at each start;
// later starts find the stored credential and never use it. Each start left that token live in
// `flotilla runners token list` for its 10 minutes (fresh-tester finding): it is revoked once the
// runner has started, used or not. Two starts on one data folder, the same runner both times.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startLocalStack } from '../src/cli/local/stack.js';
import { silentLogger } from '../src/core/log.js';
import { TEST_GATEWAY } from '../src/server/test-helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'flotilla-up-regtoken-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const start = () => startLocalStack({ data: dir, port: 0, agentsDirs: [], gateway: TEST_GATEWAY, repoBaseDir: dir, log: silentLogger });

describe('up: the local runner registration token', () => {
  it('is used at the first start, revoked unused at the next; no live token is left either time', async () => {
    const first = await start();
    const runnerId = first.runner!.runnerId;
    let tokens = await first.store.listRegistrationTokens();
    expect(tokens).toHaveLength(1);
    expect(tokens[0]!.usedAt).not.toBeNull();
    expect(await first.store.listRegistrationTokens({ liveAt: Date.now() })).toEqual([]);
    await first.close();

    const second = await start();
    expect(second.runner!.runnerId).toBe(runnerId); // the stored credential, not a new registration
    tokens = await second.store.listRegistrationTokens();
    expect(tokens).toHaveLength(2);
    expect(tokens[1]!.usedAt).toBeNull();
    expect(tokens[1]!.revokedAt).not.toBeNull();
    expect(await second.store.listRegistrationTokens({ liveAt: Date.now() })).toEqual([]);
    await second.close();
  });
});
