/**
 * The runner name rule (issue "never run a job twice", part 2): a name belongs to at most one
 * runner that is not revoked (a revoked runner's name is free again).
 * - Registration (`POST /api/runners/register`) with a name another such runner has gets the
 *   first free `NAME-2`, `NAME-3`, ... instead, and the response says so (`name`, `warning`).
 * - A `hello` asking for a name another such runner has keeps the runner's current name: the
 *   server logs a warning and its `welcome` tells the runner the name in effect.
 * Names compare exactly (case-sensitive), as `flotilla runners ... RUNNER` resolves them.
 */

/** Longest runner name (protocol RunnerName). */
const MAX_NAME = 63;

/**
 * `asked` when `taken` does not hold it, else the first `asked-K` (K = 2, 3, ...) not in
 * `taken`, with `asked` shortened so the result stays within 63 characters. `asked` must be a
 * valid runner name (protocol RunnerName); the result then is one too.
 */
export function freeRunnerName(asked: string, taken: ReadonlySet<string>): string {
  if (!taken.has(asked)) return asked;
  for (let k = 2; ; k++) {
    const suffix = `-${k}`;
    const name = `${asked.slice(0, MAX_NAME - suffix.length)}${suffix}`;
    if (!taken.has(name)) return name;
  }
}

/**
 * The prefix every name {@link freeRunnerName} may return for `asked` starts with (for a
 * `LIKE 'prefix%'` look-up of the names that matter; suffixes up to 12 characters).
 */
export function runnerNamePrefix(asked: string): string {
  return asked.slice(0, MAX_NAME - 12);
}

/** What a registration that did not get its name is told (RegisterRunnerResponse `warning`). */
export function renamedWarning(asked: string, given: string): string {
  return `runner name ${asked} is taken by another runner that is not revoked: registered as ${given} (start it with --name ${given}, or revoke the other runner to free the name)`;
}
