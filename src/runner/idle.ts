/** Options of {@link IdleWatch}. Times in ms. */
export interface IdleWatchOptions {
  /** The idle limit (agent `limits.idleSeconds` × 1000). */
  idleMs: number;
  /**
   * Asks the control plane for fresh model-call activity before the job is ended (the runner
   * sends a heartbeat out of turn and waits, bounded, for the `job.activity` reply, which
   * lands in {@link IdleWatch.model}). Absent: output alone decides.
   */
  refresh?: () => Promise<void>;
  /** Called once, when neither output nor a model call happened for `idleMs`. */
  onIdle: () => void;
  /** Clock; default Date.now. */
  now?: () => number;
}

/**
 * The idle limit of one job attempt (issue 4): "no output AND no model call for N seconds".
 * Output is seen by the runner ({@link output}); model calls are seen by the gateway, which
 * may be another server replica, and reach the runner through the hub's `job.activity`
 * replies to heartbeats ({@link model}). A call in flight counts as activity at every report.
 * When the limit seems reached, the watch first asks for fresh activity (`refresh`), so a
 * call that started since the last heartbeat is not missed, and only then ends the job.
 */
export class IdleWatch {
  private lastOutput: number;
  private lastModel = 0;
  private timer: NodeJS.Timeout | null = null;
  private done = false;
  private readonly now: () => number;

  constructor(private readonly o: IdleWatchOptions) {
    this.now = o.now ?? Date.now;
    this.lastOutput = this.now();
    this.schedule(o.idleMs);
  }

  /** The harness wrote output now. */
  output(): void {
    this.lastOutput = this.now();
  }

  /** A `job.activity` report: `inFlight` calls now, the last start/end `idleMs` ago (server clock). */
  model(inFlight: number, idleMs: number): void {
    const at = inFlight > 0 ? this.now() : this.now() - idleMs;
    if (at > this.lastModel) this.lastModel = at;
  }

  /** Stops watching (the process ended). */
  stop(): void {
    this.done = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private remaining(): number {
    return Math.max(this.lastOutput, this.lastModel) + this.o.idleMs - this.now();
  }

  private schedule(ms: number): void {
    if (this.done) return;
    this.timer = setTimeout(() => void this.fire(), Math.max(1, ms));
  }

  private async fire(): Promise<void> {
    this.timer = null;
    if (this.done) return;
    let wait = this.remaining();
    if (wait <= 0 && this.o.refresh) {
      await this.o.refresh().catch(() => undefined);
      if (this.done) return;
      wait = this.remaining();
    }
    if (wait > 0) return this.schedule(wait);
    this.done = true;
    this.o.onIdle();
  }
}
