import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { credentialPath, loadCredential, saveCredential } from './credential.js';

let work: string;
beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), 'flotilla-cred-'));
});
afterEach(() => rmSync(work, { recursive: true, force: true }));

describe('the credential lives in <work>/secret', () => {
  it('saves to secret/credential.json (folder 0700, file 0600)', async () => {
    await saveCredential(work, { serverUrl: 'http://h:1', runnerId: 3, credential: 'flc_x' });
    expect(credentialPath(work)).toBe(join(work, 'secret', 'credential.json'));
    expect(statSync(join(work, 'secret')).mode & 0o777).toBe(0o700);
    expect(statSync(credentialPath(work)).mode & 0o777).toBe(0o600);
    expect(await loadCredential(work, 'http://H:1/')).toEqual({ serverUrl: 'http://h:1', runnerId: 3, credential: 'flc_x' });
  });

  it('moves a credential left at the old place (<work>/credential.json) on load', async () => {
    writeFileSync(join(work, 'credential.json'), JSON.stringify({ serverUrl: 'http://h:1', runnerId: 9, credential: 'flc_old' }), { mode: 0o600 });
    expect(await loadCredential(work, 'http://h:1')).toEqual({ serverUrl: 'http://h:1', runnerId: 9, credential: 'flc_old' });
    expect(existsSync(join(work, 'credential.json'))).toBe(false);
    expect(JSON.parse(readFileSync(credentialPath(work), 'utf8'))).toMatchObject({ runnerId: 9 });
    expect(statSync(join(work, 'secret')).mode & 0o777).toBe(0o700);
  });
});
