/**
 * Renders what an agent sees when its task wakes (issue 7, "What the agent sees on a wake"):
 * the events since its last turn, oldest first, each as `- [kind] actor: summary (time)`,
 * then the queued prompts in the order they were sent. Pure: no I/O.
 */
export interface WakeEvent {
  kind: string;
  actor: string | null;
  summary: string;
  /** epoch ms */
  occurredAt: number;
}

/** Longest rendered prompt, characters; older events are cut first (the count stays in the text). */
export const MAX_WAKE_PROMPT_CHARS = 200_000;

export function renderWakePrompt(task: { id: number; title: string; keys: readonly string[] }, events: readonly WakeEvent[], prompts: readonly string[]): string {
  const head = [`Task ${task.id}${task.title ? `: ${task.title}` : ''}`];
  if (task.keys.length) head.push(`Owns: ${task.keys.join(', ')}`);
  const parts: string[] = [head.join('\n')];
  if (events.length) {
    const lines = events.map((e) => `- [${e.kind}] ${e.actor ? `${e.actor}: ` : ''}${e.summary} (${new Date(e.occurredAt).toISOString()})`);
    parts.push(`What happened since your last turn (${events.length} event${events.length === 1 ? '' : 's'}, oldest first):\n${lines.join('\n')}`);
  }
  if (prompts.length) parts.push(prompts.length === 1 ? `Request:\n${prompts[0]}` : `Requests, in order:\n${prompts.map((p, i) => `${i + 1}. ${p}`).join('\n')}`);
  let text = parts.join('\n\n');
  if (text.length > MAX_WAKE_PROMPT_CHARS) text = `${text.slice(0, MAX_WAKE_PROMPT_CHARS)}\n[... cut at ${MAX_WAKE_PROMPT_CHARS} characters]`;
  return text;
}
