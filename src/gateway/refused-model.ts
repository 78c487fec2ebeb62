import type { ProviderName } from './config.js';
import type { ModelDirectory } from './model-directory.js';
import { modelNameProblem } from './request.js';
import { repeatedMember } from './repeated-members.js';

const MODEL_ONLY = ['model'] as const;

/** The ledger's model for a refused call whose body named none the gateway could read. */
export const UNKNOWN_MODEL = 'unknown';

/**
 * The model a request body names, for the ledger row of a call refused for another field (e.g.
 * `max_tokens: "10"`): the body's `model` when the body is a JSON object whose `model` is a
 * string a request may give (request.ts modelNameProblem), else
 * {@link UNKNOWN_MODEL} (`raw` not JSON, not an object, `model` missing, bad or given twice). Only on the
 * refusal path: it parses the body again.
 */
export function modelNamedIn(raw: string): string {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return UNKNOWN_MODEL;
  }
  const model = json !== null && typeof json === 'object' && !Array.isArray(json) ? (json as { model?: unknown }).model : undefined;
  if (typeof model !== 'string' || modelNameProblem(model) !== null) return UNKNOWN_MODEL;
  // a body giving `model` twice names none (JSON.parse kept the last: the ledger named the copy refused)
  return repeatedMember(raw, MODEL_ONLY) === null ? model : UNKNOWN_MODEL;
}

/**
 * The provider for the ledger row of a call refused before routing (a bad body): the one the
 * route of `model` names, as a served call's row would (the README: a refusal row names "the
 * provider its route names"); the wire format's own (`fallback`) when no model could be read or
 * no route matches. Fresh-user finding: every malformed OpenAI-format call was recorded against
 * the default OpenAI-format upstream, whatever its model's route.
 */
export async function refusedProvider(directory: Pick<ModelDirectory, 'providerFor'>, model: string, fallback: ProviderName): Promise<ProviderName> {
  if (model === UNKNOWN_MODEL) return fallback;
  return (await directory.providerFor(model, fallback)) ?? fallback;
}
