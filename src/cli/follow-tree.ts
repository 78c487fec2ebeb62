import type { FlotillaClient } from '../client/index.js';
import { TERMINAL_STATUSES, type JobEvent } from '../protocol/index.js';
import { EventFormatter } from './format.js';

/**
 * Follows the children a followed job starts (issue 6): on each `child.started` event of any
 * job it follows, it opens that child's event stream and prints the child's tool calls and
 * results prefixed by the child's agent name (`repo-upgrader → Bash {"command":"npm test"}`),
 * a line when it pauses for budget (naming the top-up command) and when it resumes, and
 * follows grandchildren the same way. `stop()` closes every stream once the root ended.
 */
export class TreeFollower {
  private readonly ac = new AbortController();
  private readonly running = new Map<number, Promise<void>>();

  /**
   * `canTopUp` false: the server ends with the command (`run --local`), so a child's pause line
   * names no top-up (it said one resumes it, then the run ended saying none could: a fresh tester).
   */
  constructor(
    private readonly client: FlotillaClient,
    private readonly print: (line: string) => void,
    signal?: AbortSignal,
    private readonly canTopUp = true,
  ) {
    signal?.addEventListener('abort', () => this.ac.abort(), { once: true });
  }

  /** Number of child streams opened so far. */
  get followed(): number {
    return this.running.size;
  }

  /** Looks at an event of a followed job: a `child.started` starts following that child. */
  onEvent(ev: JobEvent): void {
    if (ev.type !== 'child.started' || this.running.has(ev.data.jobId) || this.ac.signal.aborted) return;
    this.running.set(ev.data.jobId, this.follow(ev.data.jobId, ev.data.agent));
  }

  private async follow(jobId: number, agent: string): Promise<void> {
    const fmt = new EventFormatter(agent);
    let paused = false;
    try {
      for await (const ev of this.client.followEvents(jobId, { signal: this.ac.signal })) {
        this.onEvent(ev);
        if (ev.type === 'tool.call' || ev.type === 'tool.result' || ev.type === 'child.started') {
          const line = fmt.line(ev);
          if (line) this.print(line);
        } else if (ev.type === 'status') {
          // a child waiting for a top-up says so (fresh-tester finding: the attached run of a tree
          // whose six children had paused said only "still working")
          const was = paused;
          paused = ev.data.status === 'paused';
          if (paused && !was) this.print(`${agent} (job ${jobId}) paused for budget` + (this.canTopUp ? `: \`flotilla budget ${jobId} --add USD\` from another shell resumes it (\`flotilla budget ${jobId}\` says how much)` : ''));
          else if (was && !paused && !TERMINAL_STATUSES.includes(ev.data.status) && ev.data.status !== 'cancelling') this.print(`${agent} (job ${jobId}) resumed`);
        }
      }
    } catch {
      // A child's stream failing (server gone, aborted) does not fail the parent's run.
    }
  }

  /** Waits up to `graceMs` for the children's streams to end by themselves, then closes the rest. */
  async stop(graceMs = 2000): Promise<void> {
    const all = Promise.all(this.running.values());
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([all, new Promise<void>((r) => (timer = setTimeout(r, graceMs)))]);
    clearTimeout(timer);
    this.ac.abort();
    await all;
  }
}
