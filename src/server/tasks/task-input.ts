import type { AgentRegistry } from '../agents.js';

/** The fields every task turn adds to the task's input (see TaskEngine.wake). */
export const TASK_INPUT_FIELDS = ['taskPrompt', 'taskId', 'taskTurn'] as const;

/**
 * Checks that agent `agent` can run a task's turns: its inputSchema must accept the task's
 * `input` plus `taskPrompt` (string), `taskId` and `taskTurn` (positive integers), which
 * every wake adds (rule: issue 7 task engine; found by the fresh-user test, FX2).
 * Returns null when it can, else a message naming what the schema refused and what it must allow.
 */
export function taskInputProblem(agents: Pick<AgentRegistry, 'validateInput'>, agent: string, input: Record<string, unknown> = {}): string | null {
  const sample = { ...input, taskPrompt: 'prompt', taskId: 1, taskTurn: 1 };
  const problems = agents.validateInput(agent, sample);
  if (!problems.length) return null;
  return `agent ${agent} cannot run tasks: its inputSchema refuses a turn's input (${problems.map((p) => `${p.field}: ${p.message}`).join('; ')}); a task agent's inputSchema must allow taskPrompt (string), taskId and taskTurn (integers) besides the task's input, e.g. agents/issue-worker`;
}
