import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FlotillaClient } from '../client/index.js';
import { runCli } from './test-io.js';
import { startLocalUp, type LocalUp } from './test-up.js';

// `flotilla budget` and `flotilla costs` against a real `flotilla up --no-runner` (SQLite, HTTP).

let up: LocalUp;
let data: string;
let url: string;

const run = (...args: string[]) => runCli([...args, '--server', url]);

beforeAll(async () => {
  up = await startLocalUp('flotilla-budget-cli-');
  ({ data, url } = up);
});

afterAll(async () => {
  expect(await up.stop()).toBe(0);
});

describe('flotilla budget and flotilla costs', () => {
  it('budget JOB shows the tree budget; --add tops it up (table and JSON); bad input exits non-zero naming it', async () => {
    const client = new FlotillaClient({ url, token: (await readFile(join(data, 'admin-token'), 'utf8')).trim() });
    const job = await client.createJob({ agent: 'test-fixer', input: { repo: 'examples/calc' }, budgetUsd: 1.5 });
    const show = await run('budget', String(job.id));
    expect(show.code).toBe(0);
    expect(show.out).toMatch(/^budget:\s+\$1\.500000$/m);
    expect(show.out).toMatch(/^spent:\s+\$0\.000000$/m);
    expect(show.out).toMatch(/^left:\s+\$1\.500000$/m);
    const add = await run('budget', String(job.id), '--add', '2', '--json');
    expect(add.code).toBe(0);
    expect(JSON.parse(add.out)).toEqual({ jobId: job.id, budget: { rootId: job.id, limitMicros: 3_500_000, spentMicros: 0, reservedMicros: 0, remainingMicros: 3_500_000 }, resumed: [], pausedJobs: [], jobStatus: expect.any(String), topUp: { addedMicros: 2_000_000, limitMicros: 3_500_000 } }); // the job's status, whatever its runner has got to
    process.env.FLOTILLA_BUDGET_ADD = '0.25';
    const viaEnv = await run('budget', String(job.id));
    delete process.env.FLOTILLA_BUDGET_ADD;
    expect(viaEnv.code).toBe(0);
    expect(viaEnv.out).toMatch(/^added \$0\.250000 to job tree/m);
    expect(viaEnv.out).toMatch(/^budget:\s+\$3\.750000$/m);
    const bad = await run('budget', String(job.id), '--add', '-1');
    expect(bad.code).not.toBe(0);
    expect(bad.err).toMatch(/--add must be a positive number of US dollars, a plain decimal/);
    const tiny = await run('budget', String(job.id), '--add', '0.0000001');
    expect([tiny.code, tiny.err]).toEqual([2, expect.stringMatching(/--add must be a positive number of US dollars, at least 0\.000001 dollars \(one micro-dollar\)/)]);
    const missing = await run('budget', '99999');
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/no job 99999/);
  });

  it('costs --by agent --since 7d: a table with a total, or JSON; a bad --by is refused', async () => {
    const empty = await run('costs', '--by', 'agent', '--since', '7d');
    expect(empty.code).toBe(0);
    expect(empty.out).toMatch(/^no model calls since /);
    const j = await run('costs', '--by', 'day', '--json');
    expect(j.code).toBe(0);
    expect(JSON.parse(j.out)).toMatchObject({ by: 'day', rows: [], total: { calls: 0, costMicros: 0 } });
    const bad = await run('costs', '--by', 'planet');
    expect(bad.code).not.toBe(0);
    expect(bad.err).toMatch(/planet/);
    const badSince = await run('costs', '--since', 'yesterday');
    expect(badSince.code).toBe(2); // a bad flag value: refused before asking the server
    expect(badSince.err).toMatch(/^flotilla: option '--since <when>' argument 'yesterday' is invalid\. --since must be like 30m, 12h, 7d, 2w \(1 to 6 digits\) or an ISO-8601 date/);
  });
});
