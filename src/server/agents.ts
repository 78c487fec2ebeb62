import { readdir, readFile, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { AgentFile, describeIssues, type AgentDefinition } from '../protocol/index.js';
import type { Logger } from '../core/log.js';
import { silentLogger } from '../core/log.js';

/** One problem with a job input: `field` is a dotted path starting at `input` (e.g. `input.repo`). */
export interface InputProblem {
  field: string;
  message: string;
}

interface LoadedAgent {
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
        const agent = await loadAgent(folder, file);
        if (agents.has(agent.definition.name)) log.info('agent redefined', { agent: agent.definition.name, file });
        agents.set(agent.definition.name, agent);
      }
    }
    return new AgentRegistry(agents);
  }

  /** Every loaded agent definition, sorted by name. */
  list(): AgentDefinition[] {
    return [...this.agents.values()].map((a) => a.definition).sort((a, b) => a.name.localeCompare(b.name));
  }

  /** The agent named `name`, or undefined. */
  get(name: string): AgentDefinition | undefined {
    return this.agents.get(name)?.definition;
  }

  /**
   * Checks `input` against the agent's inputSchema. Empty list = valid.
   * @throws Error when the agent is unknown.
   */
  validateInput(name: string, input: unknown): InputProblem[] {
    const a = this.agents.get(name);
    if (!a) throw new Error(`unknown agent ${JSON.stringify(name)}`);
    if (a.validate(input)) return [];
    return (a.validate.errors ?? []).map(toProblem);
  }

  /** `<agent dir>/script.yaml` when the agent has one (the scripted model's turns), else null. */
  scriptFileFor(name: string): string | null {
    return this.agents.get(name)?.scriptFile ?? null;
  }
}

async function loadAgent(folder: string, file: string): Promise<LoadedAgent> {
  let raw: unknown;
  try {
    raw = parseYaml(await readFile(file, 'utf8'));
  } catch (err) {
    throw new Error(`${file}: not valid YAML: ${(err as Error).message}`);
  }
  const parsed = AgentFile.safeParse(raw ?? {});
  if (!parsed.success) throw new Error(`${file}: ${describeIssues(parsed.error.issues)}`);
  const def = parsed.data;
  if (def.harness === 'command' && !def.command) throw new Error(`${file}: command: required when harness is "command"`);
  // `./x` and `../x` in a command are files of the agent folder: made absolute here (the runner
  // must see the same path: a local runner, or the agent folder at the same place on the runner).
  if (def.command) def.command = def.command.map((a) => (a.startsWith('./') || a.startsWith('../') ? resolve(folder, a) : a));
  const promptFile = resolve(folder, def.prompt);
  let promptText: string;
  try {
    promptText = await readFile(promptFile, 'utf8');
  } catch {
    throw new Error(`${file}: prompt: file ${promptFile} cannot be read`);
  }
  let validate: ValidateFunction;
  try {
    validate = new Ajv({ strict: false, allErrors: true }).compile(def.inputSchema);
  } catch (err) {
    throw new Error(`${file}: inputSchema: ${(err as Error).message}`);
  }
  const script = join(folder, 'script.yaml');
  return { definition: { ...def, promptText }, dir: folder, validate, scriptFile: (await exists(script)) ? script : null };
}
