import { z } from 'zod';

/**
 * A model name as a harness is given it (`claude --model M`, `codex --model M`): from an
 * agent's `model:`, an effort tier (API, CLI, FLOTILLA_EFFORT_TIERS) or a run. 1–200 characters
 * of letters, digits and `. _ : @ / + - [ ]`, starting with a letter or digit: the names
 * providers and their clouds use (`claude-sonnet-4-5`, `claude-sonnet-4-5[1m]`,
 * `anthropic.claude-3-5-sonnet-20241022-v2:0`, `claude-3-5-sonnet-v2@20241022`,
 * `qwen2.5-coder:7b`, `openai/gpt-4o`). Anything else is refused where it is set: the name
 * becomes one argument of the harness's command line, so a leading `-` would be read as an
 * option (fresh-user finding: a tier whose model was `--dangerously-skip-permissions`), and a
 * line break or space would show as another name in every table.
 */
export const HarnessModel = z
  .string()
  .trim()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:@/+[\]-]{0,199}$/, 'must be 1-200 characters of letters, digits, . _ : @ / + - [ ], starting with a letter or digit (the harness\'s --model)');
export type HarnessModel = z.infer<typeof HarnessModel>;
