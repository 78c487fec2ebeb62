import type { TablePrice } from './price-schema.js';
import { DEFAULT_MAX_OUTPUT_TOKENS } from './worst-case.js';

/**
 * The output tokens one choice of a call is reserved for — and, as usage.ts boundedUsage's
 * output bound, the most it can be charged — given the request's output limit `requested`
 * (Anthropic `max_tokens`; OpenAI `max_completion_tokens` / `max_tokens` / `max_output_tokens`;
 * already at most request.ts MAX_OUTPUT_TOKENS_CEILING) and its model's entry in the price table:
 * - a limit past the model's maximum output (`price.maxOutput`, tokens, data/prices.json) →
 *   that maximum: no model writes more in one call (Anthropic and OpenAI refuse such a request
 *   with a 400, which is not billed), so reserving more would only hold budget for nothing. The
 *   gateway then sends the upstream this limit in place of the client's (anthropic-routes.ts,
 *   openai-routes.ts), so a table behind the provider, or an admin's lower `--max-output`, never
 *   lets the upstream write and bill past what was reserved and what is charged (fresh-user
 *   finding: a 1,000-token limit went upstream under a `maxOutput` of 100; 500 tokens were
 *   billed and 100 charged);
 * - no limit (the OpenAI formats make it optional) → the documented default
 *   {@link DEFAULT_MAX_OUTPUT_TOKENS} (32,000), or the model's maximum output when that is
 *   lower (gpt-4o: 16,384); never 0. The gateway then sends the upstream this limit
 *   (openai-wire.ts withOutputLimit), so the model stops where the reservation does — and a
 *   model whose maximum is below the default is not sent a limit it refuses with a 400. Not the
 *   model's maximum when that is higher: gpt-5's 128,000 output tokens at $10/MTok would reserve
 *   $1.28 for every Codex call (Codex sends no limit), more than a whole $1 tree holds;
 * - otherwise the request's limit.
 */
export function outputBound(requested: number | undefined, price: TablePrice): number {
  const max = price.maxOutput;
  if (requested === undefined) return max !== undefined && max < DEFAULT_MAX_OUTPUT_TOKENS ? max : DEFAULT_MAX_OUTPUT_TOKENS;
  return max !== undefined && requested > max ? max : requested;
}
