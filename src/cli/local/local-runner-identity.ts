import { randomUUID } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { hashToken } from '../../core/tokens.js';
import { RunnerInstance } from '../../protocol/index.js';
import { credentialPath, ensureSecretDir, normalizeServerUrl, saveCredential, type StoredCredential } from '../../runner/credential.js';
import type { Store } from '../../store/types.js';

// The runner that `flotilla up` and `flotilla run --local` start in their own process belongs
// to the data folder: one registration and one runner process identity for it, whatever port
// the server listens on this time and however the last process ended.
// - `run --local` listens on a new ephemeral port each time, and a runner's credential is kept
//   for the URL it registered with (runner/credential.ts): every run registered a new runner
//   (HOST-local-2, -3, ...) and said a name was taken.
// - A `flotilla up` started again right after a crash (kill -9, OOM, a supervisor's restart)
//   got its own runner refused for up to the heartbeat timeout (close 4409: "another runner
//   process is connected with this runner credential"): the store still showed the dead
//   process's connection as live, and the new process had a new instance id.
// Both are the same runner going on: the data folder's lock (store/open.ts, SQLite) or the
// runner's work-folder lock (runner/work-lock.ts) proves that no other process on this host
// uses it now. A copy of the folder on another host is another runner process: the instance id
// is kept per host name, so a copy started elsewhere gets a new one (and 4409 while this one lives).

/** What `<workDir>/secret/local-instance.json` holds: the host the id was made on and the id. */
interface StoredInstance {
  host: string;
  instance: string;
}

/**
 * The instance id (`hello.instance`) of this data folder's runner on this host: the one kept in
 * `<workDir>/secret/local-instance.json` when it was made on this host name, else a new random
 * one, written there (mode 0600) for the next start.
 * @throws Error from the file system when the folder cannot be written.
 */
export async function localRunnerInstance(workDir: string): Promise<string> {
  const file = join(await ensureSecretDir(workDir), 'local-instance.json');
  const host = hostname();
  try {
    const kept = JSON.parse(await readFile(file, 'utf8')) as Partial<StoredInstance>;
    if (kept.host === host && RunnerInstance.safeParse(kept.instance).success) return kept.instance as string;
  } catch {
    // none yet, or unreadable: a new one
  }
  const instance = randomUUID();
  await writeFile(file, JSON.stringify({ host, instance } satisfies StoredInstance) + '\n', { mode: 0o600 });
  return instance;
}

/**
 * Points the credential kept in `workDir` at `serverUrl` when it was made for another URL of
 * this same store (the local server on another port): it must name a runner of `store` whose
 * credential hash matches and that is not revoked; anything else is left as it is (the runner
 * then registers anew, as before). Written as the runner writes it (runner/credential.ts
 * saveCredential: mode 0600, replaced in one rename).
 * @returns true when the credential now points at `serverUrl` (or already did).
 */
export async function adoptLocalCredential(workDir: string, serverUrl: string, store: Pick<Store, 'findRunnerByCredentialHash'>): Promise<boolean> {
  let kept: Partial<StoredCredential>;
  try {
    kept = JSON.parse(await readFile(credentialPath(workDir), 'utf8')) as Partial<StoredCredential>;
  } catch {
    return false; // none yet (a legacy-place credential is moved by the runner itself)
  }
  if (typeof kept.credential !== 'string' || typeof kept.runnerId !== 'number' || typeof kept.serverUrl !== 'string') return false;
  if (normalizeServerUrl(kept.serverUrl) === normalizeServerUrl(serverUrl)) return true;
  const row = await store.findRunnerByCredentialHash(hashToken(kept.credential));
  if (!row || row.id !== kept.runnerId || row.revokedAt !== null) return false;
  await saveCredential(workDir, { serverUrl, runnerId: kept.runnerId, credential: kept.credential });
  return true;
}
