import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { AgentFile, describeIssues, type AgentDefinition } from '../protocol/index.js';
import type { Logger } from '../core/log.js';
import { silentLogger } from '../core/log.js';
import { loadModelScript, type ModelScript } from '../gateway/script.js';
import type { Store } from '../store/types.js';
import { installedAgent, type InstalledAgent } from './agents-installed.js';
import { confinedFile } from './agent-files.js';

/** One problem with a job input: `field` is a dotted path starting at `input` (e.g. `input.repo`). */
export interface InputProblem {
  field: string;
  message: string;
}

/** An agent as loaded: definition, its folder, its compiled input check, its script file. */
export interface LoadedAgent {
  definition: AgentDefinition;
  dir: string;
  validate: ValidateFunction;
  scriptFile: string | null;
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

/** Turns one Ajv error into an {@link InputProblem} naming the input field. */
function toProblem(e: ErrorObject): InputProblem {
  const parts = e.instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  const params = e.params as Record<string, unknown>;
  if (e.keyword === 'required' && typeof params.missingProperty === 'string') {
    return { field: ['input', ...parts, params.missingProperty].join('.'), message: 'is required' };
  }
  if (e.keyword === 'additionalProperties' && typeof params.additionalProperty === 'string') {
    return { field: ['input', ...parts, params.additionalProperty].join('.'), message: 'is not allowed' };
  }
  return { field: ['input', ...parts].join('.'), message: e.message ?? `fails ${e.keyword}` };
}

/**
 * The agents this server knows, loaded from folders of `<name>/agent.yaml` (+ prompt file,
 * optional `script.yaml` for the offline scripted model). A folder that itself holds an
 * `agent.yaml` is loaded as one agent. When two folders define the same name, the later one
 * in `dirs` wins.
 */
export class AgentRegistry {
  private constructor(private readonly agents: Map<string, LoadedAgent>) {}

  /** Installed versions (store, migration 0011) per agent name, by seq ascending; the last one is current. */
  private installed = new Map<string, InstalledAgent[]>();
  private store: Pick<Store, 'listAgentVersions'> | null = null;
  private log: Logger = silentLogger;

  /**
   * Reads installed agents from `store` now and on every {@link refresh}. An installed agent
   * takes precedence over a folder agent of the same name.
   * @throws Error when the store cannot be read.
   */
  async useStore(store: Pick<Store, 'listAgentVersions'>, log: Logger = silentLogger): Promise<void> {
    this.store = store;
    this.log = log;
    await this.refresh();
  }

  /**
   * Re-reads installed agents from the store (another replica may have installed some). A
   * stored version that does not parse is skipped with a warning, never loaded half.
   */
  async refresh(): Promise<void> {
    if (!this.store) return;
    const next = new Map<string, InstalledAgent[]>();
    for (const row of await this.store.listAgentVersions()) {
      let a: InstalledAgent;
      try {
        a = installedAgent(row);
      } catch (err) {
        this.log.warn('installed agent skipped', { agent: row.name, version: row.version, error: (err as Error).message });
        continue;
      }
      const list = next.get(row.name) ?? [];
      list.push(a);
      next.set(row.name, list);
    }
    this.installed = next;
  }

  /**
   * True when `name` is a built-in folder agent (loaded from an agents folder at start) that no
   * installed version shadows yet: installing an agent of that name would replace it for new
   * jobs, which `POST /api/agents/install` refuses unless `replace: true`.
   */
  wouldShadowFolderAgent(name: string): boolean {
    return this.agents.has(name) && !this.installed.has(name);
  }

  /** Every installed version (oldest first per agent), with its source, ref and commit. */
  installedVersions(): InstalledAgent[] {
    return [...this.installed.values()].flat();
  }

  private current(name: string): LoadedAgent | undefined {
    return this.installed.get(name)?.at(-1) ?? this.agents.get(name);
  }

  /**
   * The definition a job of `name` created with `version` runs: that installed version when
   * it exists, else the current one (folder agents have one version). Undefined when unknown.
   */
  forJob(name: string, version: string): AgentDefinition | undefined {
    return this.installed.get(name)?.find((a) => a.definition.version === version)?.definition ?? this.current(name)?.definition;
  }

  /** The scripted model's turns for a job of `name` at `version` (see {@link forJob}), or null. */
  async scriptFor(name: string, version: string): Promise<ModelScript | null> {
    const inst = this.installed.get(name);
    const a = inst?.find((x) => x.definition.version === version) ?? inst?.at(-1);
    if (a) return a.script;
    const file = this.agents.get(name)?.scriptFile;
    return file ? loadModelScript(file) : null;
  }

  /**
   * Loads every agent under `dirs`.
   * @throws Error naming the file and the field when an agent file is bad (YAML syntax,
   *   schema, missing prompt file, invalid inputSchema), or when a folder does not exist.
   */
  static async load(dirs: readonly string[], log: Logger = silentLogger): Promise<AgentRegistry> {
    const agents = new Map<string, LoadedAgent>();
    for (const d of dirs) {
      const root = resolve(d);
      let folders: string[];
      if (await exists(join(root, 'agent.yaml'))) {
        folders = [root];
      } else {
        let entries;
        try {
          entries = await readdir(root, { withFileTypes: true });
        } catch {
          throw new Error(`agents folder ${root} cannot be read (does it exist?)`);
        }
        folders = entries.filter((e) => e.isDirectory()).map((e) => join(root, e.name)).sort();
      }
      for (const folder of folders) {
        const file = join(folder, 'agent.yaml');
        if (!(await exists(file))) continue;
        const agent = await loadAgent(folder, file, { root });
        if (agents.has(agent.definition.name)) log.info('agent redefined', { agent: agent.definition.name, file });
        agents.set(agent.definition.name, agent);
      }
    }
    return new AgentRegistry(agents);
  }

  /** Every loaded agent definition, sorted by name. */
  list(): AgentDefinition[] {
    const names = new Set([...this.agents.keys(), ...this.installed.keys()]);
    return [...names].map((n) => this.current(n)!.definition).sort((a, b) => a.name.localeCompare(b.name));
  }

  /** The agent named `name`, or undefined. */
  get(name: string): AgentDefinition | undefined {
    return this.current(name)?.definition;
  }

  /**
   * Checks `input` against the agent's inputSchema. Empty list = valid.
   * @throws Error when the agent is unknown.
   */
  validateInput(name: string, input: unknown): InputProblem[] {
    const a = this.current(name);
    if (!a) throw new Error(`unknown agent ${JSON.stringify(name)}`);
    if (a.validate(input)) return [];
    return (a.validate.errors ?? []).map(toProblem);
  }

  /** `<agent dir>/script.yaml` when the folder agent has one (the scripted model's turns), else null. Installed agents: {@link scriptFor}. */
  scriptFileFor(name: string): string | null {
    return this.agents.get(name)?.scriptFile ?? null;
  }
}

/**
 * Reads and checks one agent folder (`file` = its agent.yaml). With `resolveCommand` (default
 * true) `./x` arguments of a command become absolute paths inside `folder`. Every file read
 * (agent.yaml, the `prompt:` file, script.yaml) must resolve, symlinks followed, inside `root`
 * (default `folder`): see {@link confinedFile}.
 * @throws Error `<file>: <field>: <problem>` for a bad file, prompt or inputSchema;
 *   AgentFileEscape when a file is absolute, or leads (by `..` or a symlink) out of `root`.
 */
export async function loadAgent(folder: string, file: string, opts: { resolveCommand?: boolean; root?: string } = {}): Promise<LoadedAgent> {
  const root = opts.root ?? folder;
  const realFile = await confinedFile(root, folder, relative(folder, file), file, null);
  let raw: unknown;
  try {
    raw = parseYaml(await readFile(realFile ?? file, 'utf8'));
  } catch (err) {
    throw new Error(`${file}: not valid YAML: ${(err as Error).message}`);
  }
  const parsed = AgentFile.safeParse(raw ?? {});
  if (!parsed.success) throw new Error(`${file}: ${describeIssues(parsed.error.issues)}`);
  const def = parsed.data;
  if (def.harness === 'command' && !def.command) throw new Error(`${file}: command: required when harness is "command"`);
  // `role: R` asks for runners labelled role=R (issue 5): folded into the runner labels every job selector starts from.
  if (def.role !== undefined) {
    if (def.runnerLabels.role !== undefined && def.runnerLabels.role !== def.role) throw new Error(`${file}: role: ${def.role} contradicts runnerLabels.role=${def.runnerLabels.role}`);
    def.runnerLabels = { ...def.runnerLabels, role: def.role };
  }
  // `./x` and `../x` in a command are files of the agent folder: made absolute here (the runner
  // must see the same path: a local runner, or the agent folder at the same place on the runner).
  if (def.command && opts.resolveCommand !== false) def.command = def.command.map((a) => (a.startsWith('./') || a.startsWith('../') ? resolve(folder, a) : a));
  const promptFile = resolve(folder, def.prompt);
  const realPrompt = await confinedFile(root, folder, def.prompt, file, 'prompt');
  let promptText: string;
  try {
    if (realPrompt === null) throw new Error('missing');
    promptText = await readFile(realPrompt, 'utf8');
  } catch {
    throw new Error(`${file}: prompt: file ${promptFile} cannot be read`);
  }
  let validate: ValidateFunction;
  try {
    validate = new Ajv({ strict: false, allErrors: true }).compile(def.inputSchema);
  } catch (err) {
    throw new Error(`${file}: inputSchema: ${(err as Error).message}`);
  }
  const script = await confinedFile(root, folder, 'script.yaml', join(folder, 'script.yaml'), null);
  return { definition: { ...def, promptText }, dir: folder, validate, scriptFile: script };
}
