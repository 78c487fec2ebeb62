import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN } from './helpers.js';

// `DATABASE_URL=...?sslmode=require flotilla up` printed pg's notice raw: "(node:1234) Warning:
// SECURITY WARNING: ..." over nine lines, and Node's "Use `node --trace-warnings ...`" hint,
// before flotilla's own error (tester finding, carried several stops).
describe('a process warning from a library', () => {
  it('is said as flotilla says things, without Node\'s pid prefix or its --trace-warnings hint', () => {
    const data = mkdtempSync(join(tmpdir(), 'flotilla-warning-'));
    try {
      // port 1 refuses at once: the warning comes when the URL is read, the error after it
      const env = { ...process.env, DATABASE_URL: 'postgres://u@127.0.0.1:1/x?sslmode=require', FLOTILLA_LOG_LEVEL: 'error' };
      const r = spawnSync(process.execPath, [BIN, 'up', '--port', '0', '--data', data, '--no-runner'], { env, encoding: 'utf8', timeout: 30_000 });
      expect(r.status).toBe(1);
      const lines = r.stderr.trimEnd().split('\n');
      expect(lines[0]).toBe("flotilla: warning: SECURITY WARNING: The SSL modes 'prefer', 'require', and 'verify-ca' are treated as aliases for 'verify-full'.");
      expect(r.stderr).toContain("- If you want the current behavior, explicitly use 'sslmode=verify-full'");
      expect(r.stderr).not.toMatch(/\(node:\d+\)|--trace-warnings/);
      expect(lines.filter((l) => l.trim() === '')).toEqual([]);
      expect(lines.at(-1)).toMatch(/^flotilla: store: cannot open PostgreSQL at postgres:\/\/u@127\.0\.0\.1:1\/x\?sslmode=require: connect ECONNREFUSED/);
    } finally {
      rmSync(data, { recursive: true, force: true });
    }
  });
});
