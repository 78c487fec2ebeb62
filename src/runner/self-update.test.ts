// The update command runner (self-update.ts): exit code, version in the environment, the
// registration token kept out of it, timeout, and the failure text (tail, secrets masked).
import { describe, expect, it } from 'vitest';
import { tmpdir } from 'node:os';
import { failureDetail, runUpdateCommand } from './self-update.js';

const o = { timeoutMs: 10_000, cwd: tmpdir(), secrets: ['flc_SECRETcredential0123456789'] };

describe('runUpdateCommand', () => {
  it('succeeds on exit 0 with FLOTILLA_UPDATE_VERSION set and FLOTILLA_RUNNER_TOKEN unset', async () => {
    process.env.FLOTILLA_RUNNER_TOKEN = 'flr_registration0123456789';
    try {
      const r = await runUpdateCommand('test "$FLOTILLA_UPDATE_VERSION" = 1.2.3 && test -z "$FLOTILLA_RUNNER_TOKEN"', '1.2.3', o);
      expect(r).toEqual({ ok: true, exitCode: 0, detail: '' });
    } finally {
      delete process.env.FLOTILLA_RUNNER_TOKEN;
    }
  });

  it('a failure reports the exit code and the last stderr lines, secrets masked', async () => {
    const script = 'for i in $(seq 1 15); do echo "line $i" >&2; done; echo "auth flc_SECRETcredential0123456789 https://bob:hunter2@registry.example/ npm_abcdefghijklmnopqrstuvwxyz" >&2; echo out; exit 3';
    const r = await runUpdateCommand(script, '1.2.3', o);
    expect(r.ok).toBe(false);
    expect(r.exitCode).toBe(3);
    expect(r.detail).toBe(['line 7', 'line 8', 'line 9', 'line 10', 'line 11', 'line 12', 'line 13', 'line 14', 'line 15', 'auth *** https://***@registry.example/ npm_***'].join('\n'));
  });

  it('without stderr the stdout tail is reported; a timeout kills the command (exit code null)', async () => {
    expect((await runUpdateCommand('echo only-stdout; exit 1', 'x', o)).detail).toBe('only-stdout');
    const t0 = Date.now();
    const r = await runUpdateCommand('sleep 30', 'x', { ...o, timeoutMs: 300 });
    expect(Date.now() - t0).toBeLessThan(5000);
    expect([r.ok, r.exitCode, r.detail]).toEqual([false, null, 'timed out after 0.3 s']);
  });
});

describe('failureDetail', () => {
  it('keeps at most 1500 characters, the end', () => {
    const d = failureDetail('why', 'x'.repeat(5000), []);
    expect(d.length).toBe(1500);
    expect(d.startsWith('…')).toBe(true);
  });
});
