import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, resolve, sep } from 'node:path';
import { promisify } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { parseModelScript } from '../gateway/script.js';
import type { AgentDefinition } from '../protocol/index.js';
import type { AgentInstallSource, NewAgentVersion } from '../store/types.js';
import { loadAgent } from './agents.js';

const run = promisify(execFile);

/** A refused install: `message` names the file (relative to the repository) and the field. */
export class AgentInstallError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AgentInstallError';
  }
}

/** What {@link readAgentRepository} found: the source (with resolved commit) and every agent. */
export interface AgentRepository {
  from: AgentInstallSource;
  agents: (NewAgentVersion & { definition: AgentDefinition })[];
}

async function isDir(p: string): Promise<boolean> {
  try {
    return (await stat(p)).isDirectory();
  } catch {
    return false;
  }
}

/** Git needs no prompts and no hooks from a repository we only read. */
const GIT_ENV = { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: 'true' };

async function git(args: string[], cwd?: string): Promise<string> {
  try {
    const { stdout } = await run('git', args, { cwd, env: GIT_ENV, timeout: 120_000, maxBuffer: 16 << 20 });
    return stdout.trim();
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    // A URL may carry credentials (https://user:token@host): never echo them.
    const why = (e.stderr || e.message).replace(/\/\/[^/@\s]+@/g, '//***@').trim().split('\n').slice(-2).join(' ');
    throw new AgentInstallError(`git ${args[0]} failed: ${why}`);
  }
}

/** `https://user:token@host/x` → `https://***@host/x`: a URL's credentials never reach the store, logs or API. */
export function withoutCredentials(url: string): string {
  return url.replace(/^([a-z+]+:\/\/)[^/@\s]+@/i, '$1***@');
}

/** sha256 over every file (sorted relative path, NUL, length, NUL, bytes), `.git` left out. */
async function contentHash(root: string): Promise<string> {
  const files: string[] = [];
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      if (e.name === '.git') continue;
      const p = join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.isFile()) files.push(p);
    }
  };
  await walk(root);
  const h = createHash('sha256');
  for (const f of files.map((p) => relative(root, p).split(sep).join('/')).sort()) {
    const bytes = await readFile(join(root, f));
    h.update(`${f}\0${bytes.length}\0`).update(bytes);
  }
  return `sha256:${h.digest('hex')}`;
}

/** The agent folders of a checkout: itself (agent.yaml at the top), else `agents/*`, else `*`. */
async function agentFolders(root: string): Promise<string[]> {
  const has = async (d: string) => {
    try {
      return (await stat(join(d, 'agent.yaml'))).isFile();
    } catch {
      return false;
    }
  };
  if (await has(root)) return [root];
  const base = (await isDir(join(root, 'agents'))) ? join(root, 'agents') : root;
  const out: string[] = [];
  for (const e of (await readdir(base, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
    if (e.isDirectory() && e.name !== '.git' && (await has(join(base, e.name)))) out.push(join(base, e.name));
  }
  return out;
}

/** Reads and checks every agent under `root`; any bad one refuses them all (message relative to `root`). */
async function readAgents(root: string): Promise<AgentRepository['agents']> {
  const folders = await agentFolders(root);
  if (folders.length === 0) throw new AgentInstallError('no agent found: expected agent.yaml at the top, or <name>/agent.yaml, or agents/<name>/agent.yaml');
  const rel = (msg: string) => msg.split(root + sep).join('');
  const out: AgentRepository['agents'] = [];
  const seen = new Map<string, string>();
  for (const folder of folders) {
    const file = join(folder, 'agent.yaml');
    let loaded;
    try {
      loaded = await loadAgent(folder, file, { resolveCommand: false, root });
    } catch (err) {
      throw new AgentInstallError(rel((err as Error).message));
    }
    const name = loaded.definition.name;
    const where = relative(root, file) || 'agent.yaml';
    // `./x` in a command is a file of the agent's folder (docs/command-harness.md), but only
    // agent.yaml, the prompt and script.yaml are installed: such an agent installed fine and
    // every job of it failed (`sh: cannot open ./run.sh`).
    const local = (loaded.definition.command ?? []).findIndex((a) => a.startsWith('./') || a.startsWith('../'));
    if (local >= 0) {
      throw new AgentInstallError(
        `${where}: command[${local}]: ${loaded.definition.command![local]} is a file of the agent's folder, which agents install does not carry to the runners (it installs agent.yaml, the prompt and script.yaml): use a program on the runners' PATH or an absolute path that exists there`,
      );
    }
    if (seen.has(name)) throw new AgentInstallError(`${where}: name: ${name} is already defined by ${seen.get(name)}`);
    seen.set(name, where);
    let script: string | null = null;
    if (loaded.scriptFile) {
      script = await readFile(loaded.scriptFile, 'utf8');
      const scriptWhere = relative(root, join(folder, 'script.yaml'));
      let raw: unknown;
      try {
        raw = parseYaml(script);
      } catch (err) {
        throw new AgentInstallError(`${scriptWhere}: not valid YAML: ${(err as Error).message}`);
      }
      try {
        parseModelScript(raw, scriptWhere);
      } catch (err) {
        throw new AgentInstallError(rel((err as Error).message));
      }
    }
    out.push({ name, definition: loaded.definition, script });
  }
  return out;
}

/**
 * Fetches an agent repository and checks every definition in it, without storing anything.
 * `source`: a git URL (or a path to a git repository), cloned into a temporary folder and
 * checked out at `ref` (default: its HEAD); the resolved commit is the version's commit. A
 * plain folder (no `.git`, no `ref`) is read in place; its commit is `sha256:` of its files.
 * The temporary clone is always removed.
 * @throws AgentInstallError naming the file (relative to the repository) and the field of the
 *   first bad definition or script, or why the source could not be fetched.
 */
export async function readAgentRepository(source: string, ref: string | null): Promise<AgentRepository> {
  if (ref !== null && !/^[A-Za-z0-9][A-Za-z0-9._/@{}^~-]{0,199}$/.test(ref)) throw new AgentInstallError(`ref: ${JSON.stringify(ref)} is not a valid git ref`);
  const asPath = resolve(source);
  const plainFolder = ref === null && !/^[a-z+]+:\/\//i.test(source) && (await isDir(asPath)) && !(await isDir(join(asPath, '.git'))) && !(await stat(join(asPath, '.git')).catch(() => null));
  if (plainFolder) {
    const agents = await readAgents(asPath);
    return { from: { source: asPath, ref: null, commit: await contentHash(asPath) }, agents };
  }
  if (source.startsWith('-')) throw new AgentInstallError(`source: ${JSON.stringify(source)} is neither a git URL nor a folder`);
  const local = !/^[a-z+]+:\/\//i.test(source) && !/^[^/]+@[^/]+:/.test(source);
  if (local && !(await isDir(asPath))) throw new AgentInstallError(`source: ${source} is neither a git URL nor an existing folder`);
  const tmp = await mkdtemp(join(tmpdir(), 'flotilla-agents-'));
  try {
    const checkout = join(tmp, 'repo');
    await git(['clone', '--quiet', '--no-checkout', '--', local ? asPath : source, checkout]);
    // A branch of the source is `origin/<ref>` in the clone; tags and commits resolve as given.
    let commit: string;
    try {
      commit = await git(['rev-parse', '--verify', '--quiet', `${ref ?? 'HEAD'}^{commit}`], checkout);
    } catch {
      if (ref === null) throw new AgentInstallError(`source: ${source} has no commit to install`);
      commit = await git(['rev-parse', '--verify', '--quiet', `origin/${ref}^{commit}`], checkout).catch(() => {
        throw new AgentInstallError(`ref: ${ref} is not a branch, tag or commit of ${source}`);
      });
    }
    await git(['-c', 'advice.detachedHead=false', 'checkout', '--quiet', '--detach', commit], checkout);
    const agents = await readAgents(checkout);
    // The recorded source never keeps credentials of a URL (it is listed by the API and logged).
    return { from: { source: local ? asPath : withoutCredentials(source), ref, commit }, agents };
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
