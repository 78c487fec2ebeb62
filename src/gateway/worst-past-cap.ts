import { formatMicros } from '../core/money.js';
import { MAX_BUDGET_USD } from '../protocol/index.js';
import type { CallWorstCase } from './worst-case.js';

/** The most any job tree's budget may hold, µ$ (protocol/usd.ts MAX_BUDGET_USD: $100,000). */
export const MAX_BUDGET_MICROS = MAX_BUDGET_USD * 1_000_000;

/** The request fields that bound a call's output tokens and its web searches, per wire format. */
const FIELDS: Record<string, { output: string; searches: string }> = {
  'anthropic-messages': { output: 'max_tokens', searches: "the web search tools' max_uses" },
  'openai-chat': { output: 'max_completion_tokens (or max_tokens) × n', searches: 'the search model (one search a call)' },
  'openai-responses': { output: 'max_output_tokens', searches: 'max_tool_calls' },
};

/**
 * The 400 message for a call whose worst case (worst-case.ts callWorstCase) is more than any
 * budget can hold ({@link MAX_BUDGET_MICROS}), or null when it is not. Such a call never fits:
 * reserved for, it paused its job with a top-up to ask for that the $100,000 cap refuses (a
 * fresh tester's `max_uses: 1e15` web search: "a top-up of at least $9007199253.740991"). It is
 * refused as a bad request instead, naming what the request allows that makes it so large:
 * `api` picks the field names (anthropic-messages, openai-chat, openai-responses).
 */
export function worstPastAnyBudget(worst: CallWorstCase, api: string): string | null {
  if (worst.micros <= MAX_BUDGET_MICROS) return null;
  const f = FIELDS[api] ?? FIELDS['anthropic-messages']!;
  const c = worst.call;
  const allows = [`${c.outputTokens.toLocaleString('en-US')} output tokens (${f.output})`, `${c.inputTokens.toLocaleString('en-US')} input tokens (the body and what its server tools may add)`];
  if (c.webSearchRequests) allows.push(`${c.webSearchRequests.toLocaleString('en-US')} web searches (${f.searches})`);
  // the per-call fees of OpenAI Responses' other built-in tools (tool-fees.ts: file_search, containers, image_generation)
  const fees = worst.resumeCall.toolFeeMicros ?? 0;
  if (fees > 0) allows.push(`${fees >= Number.MAX_SAFE_INTEGER ? 'more than ' : ''}${formatMicros(fees)} of built-in tool fees (their calls, max_tool_calls)`);
  // a figure past 2^53 − 1 µ$ is held at that bound (worst-case.ts): "more than", not "up to"
  const upTo = worst.micros >= Number.MAX_SAFE_INTEGER ? `more than ${formatMicros(worst.micros)}` : `up to ${formatMicros(worst.micros)}`;
  return (
    `this call may cost ${upTo}, more than any budget can hold ($${MAX_BUDGET_USD.toLocaleString('en-US')} per job tree), so no budget or top-up could let it through; ` +
    `it allows ${allows.join(', ')}: lower what it allows`
  );
}
