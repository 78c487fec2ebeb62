import type { ProviderName } from './config.js';
import type { ModelDirectory } from './model-directory.js';
import { modelNameProblem } from './request.js';
import { repeatedMember } from './repeated-members.js';

const MODEL_ONLY = ['model'] as const;

/** The ledger's model for a refused call whose body named none the gateway could read. */
export const UNKNOWN_MODEL = 'unknown';

/**
 * What a refused call's ledger row names from its body, read again on the refusal path only
 * (e.g. `max_tokens: "10"`, or a job paused for budget): `model`, the body's when the body is a
 * JSON object whose `model` is a string a request may give (request.ts modelNameProblem) and is
 * given once, else {@link UNKNOWN_MODEL}; `streamed`, true when its `stream` is `true` (a
 * streaming call refused was recorded as not streamed: fresh-tester finding).
 */
export function requestNamedIn(raw: string): { model: string; streamed: boolean } {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return { model: UNKNOWN_MODEL, streamed: false };
  }
  const body = json !== null && typeof json === 'object' && !Array.isArray(json) ? (json as { model?: unknown; stream?: unknown }) : {};
  const streamed = body.stream === true;
  const model = body.model;
  if (typeof model !== 'string' || modelNameProblem(model) !== null) return { model: UNKNOWN_MODEL, streamed };
  // a body giving `model` twice names none (JSON.parse kept the last: the ledger named the copy refused)
  return { model: repeatedMember(raw, MODEL_ONLY) === null ? model : UNKNOWN_MODEL, streamed };
}

/**
 * The provider for the ledger row of a call refused before routing (a bad body, too large, an
 * encoding not undone): the one the route of `model` names, as a served call's row would (the
 * README: a refusal row names "the provider its route names"); when no model could be read
 * ({@link UNKNOWN_MODEL}), the server's default provider (the `*` route's:
 * ModelDirectory.defaultProvider), as for a name no specific route matches; `fallback` (the
 * wire format's own) when no route is set or none matches. Fresh-user findings: every malformed
 * OpenAI-format call was recorded against the default OpenAI-format upstream, whatever its
 * model's route; a body naming no model, against the format's upstream, not the `*` route's.
 */
export async function refusedProvider(directory: Pick<ModelDirectory, 'providerFor' | 'defaultProvider'>, model: string, fallback: ProviderName): Promise<ProviderName> {
  if (model === UNKNOWN_MODEL) return directory.defaultProvider(fallback);
  return (await directory.providerFor(model, fallback)) ?? fallback;
}
