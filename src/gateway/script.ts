import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { renderTemplate } from '../core/template.js';

/**
 * A scripted model: the assistant turns an offline "model" plays back, one per request.
 * File format (YAML), e.g. agents/test-fixer/script.yaml:
 * ```yaml
 * model: claude-sonnet-4-5          # optional, echoed in replies (else the request's model)
 * turns:
 *   - usage: { input_tokens: 1200, output_tokens: 40, cache_read_input_tokens: 0, cache_creation_input_tokens: 2000 }
 *     content:
 *       - text: "I'll run the tests first."
 *       - tool_use: { name: Bash, input: { command: "npm test" } }
 * ```
 * Strings (text and every string inside a tool input) may hold `{{job.id}}`, `{{job.branch}}`
 * (= `flotilla/job-<id>`), `{{input.<field>}}` (the job's input, with `{{input.x|default}}`)
 * and `{{workspace}}` (the harness's working directory, read from the request's system
 * prompt), filled per request (core/template.ts rules). Usage figures are tokens, reported as given.
 */
export const ScriptUsage = z.object({
  input_tokens: z.number().int().nonnegative(),
  output_tokens: z.number().int().nonnegative(),
  cache_read_input_tokens: z.number().int().nonnegative().default(0),
  cache_creation_input_tokens: z.number().int().nonnegative().default(0),
});
export type ScriptUsage = z.infer<typeof ScriptUsage>;

export const ScriptBlock = z.union([
  z.object({ text: z.string() }).strict(),
  z.object({ tool_use: z.object({ name: z.string().min(1), input: z.record(z.string(), z.unknown()).default({}) }).strict() }).strict(),
]);
export type ScriptBlock = z.infer<typeof ScriptBlock>;

export const ScriptTurn = z.object({
  usage: ScriptUsage,
  content: z.array(ScriptBlock).min(1),
});
export type ScriptTurn = z.infer<typeof ScriptTurn>;

export const ModelScript = z.object({
  model: z.string().min(1).optional(),
  turns: z.array(ScriptTurn).min(1),
});
export type ModelScript = z.infer<typeof ModelScript>;

/**
 * Validates a parsed script object.
 * @throws Error `<source>: field turns.2.content.0: ...` naming the first bad field.
 */
export function parseModelScript(raw: unknown, source = 'script'): ModelScript {
  const r = ModelScript.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0];
    throw new Error(`${source}: field ${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid'}`);
  }
  return r.data;
}

/**
 * Reads a YAML script file and validates it.
 * @throws Error naming the file (unreadable, not YAML) or the file and field (bad shape).
 */
export function loadModelScript(file: string): ModelScript {
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`model script ${file}: ${(err as Error).message}`);
  }
  return parseModelScript(raw, `model script ${file}`);
}

/** Values the placeholders of a script are filled from. */
export interface ScriptContext {
  job: { id: number; branch: string };
  /** The job's input object. */
  input: Record<string, unknown>;
  /** Absolute working directory of the harness, or '' when unknown. */
  workspace: string;
}

/** Fills placeholders in every string of `value` (deeply: arrays and objects too). */
export function fillPlaceholders<T>(value: T, ctx: ScriptContext): T {
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return renderTemplate(v, ctx as unknown as Record<string, unknown>);
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(value) as T;
}
