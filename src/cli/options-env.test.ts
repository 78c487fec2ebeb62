import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from './main.js';
import { recordingIO } from './test-io.js';

/** Every option of every command, as `flotilla jobs list --status`, with its variable. */
function allOptions(): Array<{ where: string; envVar: string | undefined }> {
  const program = buildProgram({ io: recordingIO(), setExit: () => undefined, runLocal: () => Promise.resolve(0) });
  const rows: Array<{ where: string; envVar: string | undefined }> = [];
  const walk = (cmd: Command, path: string[]) => {
    for (const o of cmd.options) rows.push({ where: `${path.join(' ')} ${o.long ?? o.flags}`, envVar: o.envVar });
    for (const sub of cmd.commands) walk(sub, [...path, sub.name()]);
  };
  walk(program, ['flotilla']);
  return rows;
}

describe('environment variables of options', () => {
  it('every option of every command has a FLOTILLA_* variable (shown in its help), but --version', () => {
    const rows = allOptions();
    expect(rows.length).toBeGreaterThan(100);
    const missing = rows.filter((r) => r.where !== 'flotilla --version' && !r.envVar?.startsWith('FLOTILLA_')).map((r) => r.where);
    expect(missing).toEqual([]);
  });

  it('the list and switch flags that lacked one read these', () => {
    const env = new Map(allOptions().map((r) => [r.where, r.envVar]));
    expect(Object.fromEntries(['flotilla jobs list --status', 'flotilla jobs list --agent', 'flotilla jobs list --limit', 'flotilla jobs list --before', 'flotilla runners list --held', 'flotilla runners update --all', 'flotilla receivers create --no-complete-on-close', 'flotilla receivers create --no-wake-on-reopen', 'flotilla models price --delete', 'flotilla tiers default --clear'].map((w) => [w, env.get(w)]))).toEqual({
      'flotilla jobs list --status': 'FLOTILLA_JOB_STATUS',
      'flotilla jobs list --agent': 'FLOTILLA_JOB_AGENT',
      'flotilla jobs list --limit': 'FLOTILLA_JOB_LIMIT',
      'flotilla jobs list --before': 'FLOTILLA_JOB_BEFORE',
      'flotilla runners list --held': 'FLOTILLA_RUNNER_HELD',
      'flotilla runners update --all': 'FLOTILLA_RUNNER_UPDATE_ALL',
      'flotilla receivers create --no-complete-on-close': 'FLOTILLA_RECEIVER_NO_COMPLETE_ON_CLOSE',
      'flotilla receivers create --no-wake-on-reopen': 'FLOTILLA_RECEIVER_NO_WAKE_ON_REOPEN',
      'flotilla models price --delete': 'FLOTILLA_PRICE_DELETE',
      'flotilla tiers default --clear': 'FLOTILLA_TIER_DEFAULT_CLEAR',
    });
  });
});
