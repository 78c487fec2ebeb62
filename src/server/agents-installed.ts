import { Ajv } from 'ajv';
import { parse as parseYaml } from 'yaml';
import { parseModelScript, type ModelScript } from '../gateway/script.js';
import { AgentDefinition, describeIssues } from '../protocol/index.js';
import type { AgentVersionRow } from '../store/types.js';
import type { LoadedAgent } from './agents.js';

/** An installed agent version as the registry holds it (issue 6, agents as plugins). */
export interface InstalledAgent extends LoadedAgent {
  /** The stored row (source, ref, commit, seq, install time). */
  row: AgentVersionRow;
  /** Its scripted-model turns, or null. */
  script: ModelScript | null;
}

/**
 * Turns a stored version into a loaded agent: the definition is parsed with the protocol
 * schema and its `version` set to the row's (`v<seq>-<commit>`), so a job created from it
 * records the version that runs.
 * @throws Error `agent <name> <version>: <field>: <problem>` when the stored definition or
 *   script no longer parses (e.g. written by a newer server).
 */
export function installedAgent(row: AgentVersionRow): InstalledAgent {
  const where = `agent ${row.name} ${row.version}`;
  const parsed = AgentDefinition.safeParse(row.definition);
  if (!parsed.success) throw new Error(`${where}: ${describeIssues(parsed.error.issues)}`);
  const definition = { ...parsed.data, version: row.version };
  const validate = new Ajv({ strict: false, allErrors: true }).compile(definition.inputSchema);
  const script = row.script === null ? null : parseModelScript(parseYaml(row.script), `${where} script.yaml`);
  return { definition, dir: '', validate, scriptFile: null, row, script };
}
