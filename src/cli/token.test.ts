import { describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isLoopbackUrl, resolveToken } from './options.js';

describe('API token resolution', () => {
  const data = mkdtempSync(join(tmpdir(), 'flotilla-token-'));
  writeFileSync(join(data, 'admin-token'), 'fla_local_admin_token_value\n');

  it('knows which servers are this machine', () => {
    expect(['http://127.0.0.1:8787', 'http://127.3.2.1', 'http://localhost:1', 'http://[::1]:8787'].map(isLoopbackUrl)).toEqual([true, true, true, true]);
    expect(['http://192.0.2.2:8787', 'http://build-1:8787', 'http://127.0.0.1.evil.example', 'not a url'].map(isLoopbackUrl)).toEqual([false, false, false, false]);
  });

  it('reads <data>/admin-token for a server on this machine', async () => {
    expect(await resolveToken({ data }, 'http://127.0.0.1:9999')).toBe('fla_local_admin_token_value');
  });

  it('never sends the local admin token to another host', async () => {
    await expect(resolveToken({ data }, 'http://192.0.2.2:18798')).rejects.toThrow(/no API token for http:\/\/192\.0\.2\.2:18798: pass --token or set FLOTILLA_TOKEN/);
  });

  it('an explicit token wins everywhere', async () => {
    expect(await resolveToken({ data, token: ' fla_given ' }, 'http://192.0.2.2:1')).toBe('fla_given');
  });
});
