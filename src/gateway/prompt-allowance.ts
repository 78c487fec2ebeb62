/**
 * Input tokens the Anthropic Messages API adds to a request's own when it declares `tools`: the
 * tool-use system prompt it builds, and the definitions of Anthropic-defined client tools (bash,
 * text editor, computer use), which the body names by `type` only. The body's bytes cannot
 * bound these (a 221-byte request with the bash and text editor tools is billed ~1,300 input
 * tokens), so the worst case a call reserves (worst-case.ts) counts them on top of the body's
 * estimate: without it, concurrent calls of such small requests each fit their reservation and
 * settled past the tree's budget together (a fresh tester's finding: 197 % of a $0.035 budget).
 * The figures are Anthropic's, from its tool-use documentation ("Pricing"), the largest listed
 * for any model; they stay well within usage.ts PROMPT_SLACK_TOKENS (what a call may be charged
 * beyond its body's bytes), so a correct report is charged as given.
 */

/** The tool-use system prompt, tokens: 346 for Claude 4.x/3.7 (tool_choice auto or none); 530 for Claude 3 Opus, the largest listed. */
export const TOOL_USE_SYSTEM_PROMPT_TOKENS = 530;

/**
 * Anthropic-defined client tools by `type` prefix (their versions are dated suffixes), tokens
 * each adds: the bash tool 245; the text editor 700; computer use 735 for its definition plus
 * its system prompt (466-499), 1,234.
 */
const DEFINED_TOOL_TOKENS: ReadonlyArray<readonly [prefix: string, tokens: number]> = [
  ['bash_', 245],
  ['text_editor_', 700],
  ['computer_', 1_234],
];

/** An Anthropic-defined tool of a type not listed above (a newer one): the largest listed. */
export const UNLISTED_DEFINED_TOOL_TOKENS = 1_234;

/**
 * Anthropic server tools (by `type` prefix), whose definitions and results are reserved for by
 * server-input.ts serverInputAllowance (10,000 tokens a use): nothing more here.
 */
const SERVER_TOOLS = ['web_search_', 'web_fetch_', 'code_execution_', 'mcp_'];

/**
 * Input tokens an Anthropic Messages request's `tools` add beyond its body (see the file's
 * comment): 0 without a client tool; else {@link TOOL_USE_SYSTEM_PROMPT_TOKENS} plus, for each
 * tool with a `type` other than `custom` (an Anthropic-defined client tool), its documented
 * figure ({@link UNLISTED_DEFINED_TOOL_TOKENS} for a type not listed). A custom tool's definition
 * is in the body, so its bytes count it already; a request whose tools are all server tools
 * adds nothing here (their 10,000 tokens a use reserved cover their prompt). `body` is the
 * parsed request (anything: a body without a `tools` array adds nothing).
 */
export function anthropicToolPromptTokens(body: unknown): number {
  const tools = typeof body === 'object' && body !== null ? (body as { tools?: unknown }).tools : undefined;
  if (!Array.isArray(tools) || tools.length === 0) return 0;
  let tokens = 0;
  let client = false;
  for (const t of tools) {
    const type = typeof t === 'object' && t !== null && typeof (t as { type?: unknown }).type === 'string' ? (t as { type: string }).type : 'custom';
    if (SERVER_TOOLS.some((p) => type.startsWith(p))) continue;
    client = true;
    if (type !== 'custom') tokens += DEFINED_TOOL_TOKENS.find(([p]) => type.startsWith(p))?.[1] ?? UNLISTED_DEFINED_TOOL_TOKENS;
  }
  return client ? TOOL_USE_SYSTEM_PROMPT_TOKENS + tokens : 0;
}
