import { chmod, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { makeDir } from '../core/make-dir.js';
import { ApiErrorBody, RegisterRunnerResponse, type Labels, type RegisterRunnerRequest } from '../protocol/index.js';

/**
 * The folder of the runner's secrets: `<workDir>/secret` (mode 0700). Jobs never see into it:
 * every harness starts with an empty read-only tmpfs over it (see secret-mask.ts).
 */
export function secretDir(workDir: string): string {
  return join(workDir, 'secret');
}

/** Where the credential is kept: `<workDir>/secret/credential.json`. */
export function credentialPath(workDir: string): string {
  return join(secretDir(workDir), 'credential.json');
}

/** Before issue 5's finding 1c the credential sat at `<workDir>/credential.json`; moved on first load. */
function legacyCredentialPath(workDir: string): string {
  return join(workDir, 'credential.json');
}

/** What `<workDir>/secret/credential.json` holds (mode 0600). `credential` is a secret. */
export interface StoredCredential {
  serverUrl: string;
  runnerId: number;
  credential: string;
  /**
   * The name the runner got at registration (absent in files written before it was kept): a
   * runner registering again after a revoke without `--name` asks for it, not the host name.
   */
  name?: string;
}

/** `http://Host:8787/` → `http://host:8787` (so equal servers compare equal). */
export function normalizeServerUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`serverUrl "${url}" is not a URL (expected http(s)://host:port)`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`serverUrl "${url}" must start with http:// or https://`);
  return `${u.origin}${u.pathname.replace(/\/+$/, '')}`;
}

/**
 * The credential stored in `workDir` for `serverUrl`, or null when none (or one for another
 * server). A credential still at the old place (`<workDir>/credential.json`) is moved into
 * `<workDir>/secret/` first.
 */
export async function loadCredential(workDir: string, serverUrl: string): Promise<StoredCredential | null> {
  await moveLegacyCredential(workDir);
  let text: string;
  try {
    text = await readFile(credentialPath(workDir), 'utf8');
  } catch {
    return null;
  }
  try {
    const c = JSON.parse(text) as Partial<StoredCredential>;
    if (typeof c.credential !== 'string' || typeof c.runnerId !== 'number' || typeof c.serverUrl !== 'string') return null;
    if (normalizeServerUrl(c.serverUrl) !== normalizeServerUrl(serverUrl)) return null;
    return { serverUrl: c.serverUrl, runnerId: c.runnerId, credential: c.credential, ...(typeof c.name === 'string' && c.name !== '' ? { name: c.name } : {}) };
  } catch {
    return null;
  }
}

/**
 * Creates `<workDir>/secret` with mode 0700 (and tightens it if it exists). Returns its path.
 * @throws MakeDirError (core/make-dir.ts) naming the folder and the OS error, at once.
 */
export async function ensureSecretDir(workDir: string): Promise<string> {
  const dir = secretDir(workDir);
  await makeDir(dir, 0o700);
  await chmod(dir, 0o700);
  return dir;
}

async function moveLegacyCredential(workDir: string): Promise<void> {
  const legacy = legacyCredentialPath(workDir);
  if (!(await stat(legacy).catch(() => null))) return;
  await ensureSecretDir(workDir);
  await rename(legacy, credentialPath(workDir));
}

/** Writes `<workDir>/secret/credential.json` with mode 0600 (atomically, via a temporary file). */
export async function saveCredential(workDir: string, cred: StoredCredential): Promise<void> {
  await ensureSecretDir(workDir);
  const file = credentialPath(workDir);
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify(cred, null, 2) + '\n', { mode: 0o600 });
  await rename(tmp, file);
}

/**
 * Trades a registration token (`flr_...`) for a runner credential:
 * `POST <serverUrl>/api/runners/register` with a {@link RegisterRunnerRequest} body.
 * @throws Error with the server's message (e.g. HTTP 401 for a used/expired token), or naming
 *   the server when it cannot be reached within `timeoutMs`, does not speak TLS to an https://
 *   URL, or answers something other than Flotilla's JSON (an HTML page): one line each.
 */
export async function register(
  serverUrl: string,
  req: { token: string; name: string; labels: Labels; capacity: number },
  timeoutMs = 15_000,
): Promise<RegisterRunnerResponse> {
  const url = `${normalizeServerUrl(serverUrl)}/api/runners/register`;
  const body: RegisterRunnerRequest = { token: req.token, name: req.name, labels: req.labels, capacity: req.capacity };
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    // https:// to a plain-HTTP port: OpenSSL's record-layer error, said as what it means.
    const why = cause?.code?.startsWith('ERR_SSL_') ? `TLS handshake failed (${cause.code}): is the server https?` : (cause?.code ?? cause?.message ?? (err as Error).message);
    throw new Error(`cannot reach the control plane at ${serverUrl} to register: ${why}`);
  }
  const text = await res.text();
  let json: unknown = null;
  try {
    json = JSON.parse(text);
  } catch {
    // handled below
  }
  // The control plane answers with JSON, errors too: anything else (an HTML page) is another server, named in one line.
  const type = (res.headers.get('content-type') ?? '').split(';')[0]!.trim() || 'no content type';
  const notFlotilla = `${serverUrl} answered ${res.status} with ${type}: is --server the Flotilla control plane?`;
  if (!res.ok) {
    const e = ApiErrorBody.safeParse(json);
    if (!e.success) throw new Error(`runner registration failed: ${notFlotilla}`);
    throw new Error(`runner registration at ${serverUrl} failed (HTTP ${res.status}): ${e.data.error.message}${wrongPathHint(serverUrl, res.status, e.data.error.field)}`);
  }
  if (json === null) throw new Error(`runner registration failed: ${notFlotilla}`);
  const parsed = RegisterRunnerResponse.safeParse(json);
  if (!parsed.success) throw new Error(`runner registration at ${serverUrl}: unexpected response ${text.slice(0, 200)}`);
  return parsed.data;
}

/**
 * A hint for a registration that reached the control plane at the wrong path: `--server` with a
 * path (`http://host:8787/api`) whose registration URL is no route (404) or an API route that
 * wants an API token (401 not about the registration token: no `field`). It read "missing API
 * token: send Authorization: Bearer <token>, or sign in", as if the registration token were
 * wrong. Empty otherwise (a server behind a proxy at a path is fine).
 */
function wrongPathHint(serverUrl: string, status: number, field: string | undefined): string {
  let path: string;
  try {
    path = new URL(serverUrl).pathname.replace(/\/+$/, '');
  } catch {
    return '';
  }
  if (path === '' || !(status === 404 || (status === 401 && field === undefined))) return '';
  return ` (--server ${serverUrl} has the path ${path}: give the control plane's base URL, the one \`flotilla up\` prints, such as ${new URL(serverUrl).origin})`;
}
