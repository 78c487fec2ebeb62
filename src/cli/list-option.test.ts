import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterAll, describe, expect, it } from 'vitest';
import { listOption } from './list-option.js';
import { refuseRepeatedOptions } from './repeated-options.js';
import { runCli } from './test-io.js';

const dir = mkdtempSync(join(tmpdir(), 'flotilla-list-option-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('list options (--agents, --key)', () => {
  const parse = (argv: string[], env: Record<string, string> = {}) => {
    const saved = process.env.FLOTILLA_X_DIRS;
    if (env.FLOTILLA_X_DIRS !== undefined) process.env.FLOTILLA_X_DIRS = env.FLOTILLA_X_DIRS;
    else delete process.env.FLOTILLA_X_DIRS;
    try {
      let got: unknown;
      const p = new Command().exitOverride().argument('<agent>').argument('[input]');
      p.addOption(listOption('--dirs <dir>', 'a folder').env('FLOTILLA_X_DIRS')).action((agent: string, input: string | undefined, o: { dirs?: string[] }) => {
        got = { agent, input, dirs: o.dirs };
      });
      refuseRepeatedOptions(p);
      p.parse(['node', 'x', ...argv]);
      return got;
    } finally {
      if (saved === undefined) delete process.env.FLOTILLA_X_DIRS;
      else process.env.FLOTILLA_X_DIRS = saved;
    }
  };

  it('takes one value per use, may repeat, and leaves the command\'s arguments alone wherever it stands', () => {
    expect(parse(['--dirs', 'a', 'caller', '{}'])).toEqual({ agent: 'caller', input: '{}', dirs: ['a'] });
    expect(parse(['caller', '--dirs', 'a', '--dirs', 'b', '{}'])).toEqual({ agent: 'caller', input: '{}', dirs: ['a', 'b'] });
    expect(parse(['caller'], { FLOTILLA_X_DIRS: 'env' })).toEqual({ agent: 'caller', input: undefined, dirs: ['env'] });
    expect(parse(['caller', '--dirs', 'a'], { FLOTILLA_X_DIRS: 'env' })).toEqual({ agent: 'caller', input: undefined, dirs: ['a'] });
  });

  it('run --local --agents DIR AGENT INPUT: the agent is the agent (it was read as a folder: "missing required argument \'agent\'", tester finding)', async () => {
    const r = await runCli(['run', '--local', '--agents', dir, 'no-such-agent', '{}', '--data', join(dir, 'data')]);
    expect(r.code).toBe(1);
    expect(r.err).not.toMatch(/missing required argument/);
    expect(r.err).toMatch(/no-such-agent/);
  });
});
