import type { Readable } from 'node:stream';

/**
 * Output backpressure (JobRunDeps.backlog), events: a job printing 10 million lines (1 GB) made
 * the runner hold every line the server had not stored yet, 4 GB, until it died of it (and
 * `flotilla up`, whose runner shares its process, with it: a fresh tester's finding). Reading
 * stops at 10,000 events waiting (a few MB; under a second of the server's storing, so a
 * runner stopped mid-flood still delivers them and its give-up within its stop's time: with a
 * million waiting it exited before its give-up reached the server) and starts again under 2,500.
 */
export const OUTPUT_HIGH_WATER = 10_000;
/** See {@link OUTPUT_HIGH_WATER}. */
export const OUTPUT_LOW_WATER = 2_500;
/** How often held output looks at the backlog again, ms. */
const OUTPUT_RESUME_POLL_MS = 25;

/**
 * Holds a harness's output pipes while its upload is far behind: {@link check} after each chunk
 * read pauses both once `backlog()` (events not yet stored by the server) reaches
 * {@link OUTPUT_HIGH_WATER}; they resume under {@link OUTPUT_LOW_WATER}, or at once when
 * `released()` says the attempt stopped (its pipes must close). While held, `touch()` runs
 * every poll: the job is held by the upload, not idle, and its idle limit must not end it.
 */
export class OutputHold {
  private timer: NodeJS.Timeout | null = null;
  private exited = false;

  constructor(
    private readonly pipes: readonly Readable[],
    private readonly backlog: () => number,
    private readonly touch: () => void,
    private readonly released: () => boolean,
  ) {}

  /** After a chunk was read: hold the pipes when the backlog is at the high water mark. */
  check(): void {
    if (this.exited || this.timer || this.backlog() < OUTPUT_HIGH_WATER) return;
    for (const p of this.pipes) p.pause();
    this.timer = setInterval(() => {
      this.touch();
      if (this.backlog() >= OUTPUT_LOW_WATER && !this.released()) return;
      this.resume();
    }, OUTPUT_RESUME_POLL_MS);
  }

  /**
   * The harness exited: what is left in its pipes (at most their buffers) is read without a
   * hold from now on. Held again, the pipes did not close before their timeout and the last
   * lines were cut (seen in CI under load).
   */
  harnessExited(): void {
    this.exited = true;
    this.resume();
  }

  private resume(): void {
    if (!this.timer) return;
    clearInterval(this.timer);
    this.timer = null;
    for (const p of this.pipes) p.resume();
  }
}
