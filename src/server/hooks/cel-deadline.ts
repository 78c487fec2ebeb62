import vm from 'node:vm';

/**
 * Runs synchronous code with a wall-clock bound, on the calling thread: node:vm's `timeout`
 * starts a watchdog thread that terminates the running JavaScript (regex backtracking included)
 * once `ms` pass, and the call then throws. Used for webhook CEL expressions that may be
 * superlinear (cel-limits.ts), so that one delivery can hold the event loop for at most ~`ms`.
 * Costs ~0.15-0.2 ms per call (watchdog thread start), which is why linear expressions skip it.
 */
const sandbox = vm.createContext({ run: null as null | (() => unknown) });
const script = new vm.Script('run()', { filename: 'cel-deadline' });

/** Thrown when `runWithDeadline` stopped the work. */
export class DeadlineExceeded extends Error {
  constructor(ms: number) {
    super(`CEL evaluation stopped after its ${ms} ms budget`);
    this.name = 'DeadlineExceeded';
  }
}

/**
 * Returns `fn()`, or throws `DeadlineExceeded` if it ran longer than `ms` (integer ms > 0).
 * Errors thrown by `fn` pass through unchanged. `fn` must be synchronous.
 */
export function runWithDeadline<T>(fn: () => T, ms: number): T {
  sandbox.run = fn;
  try {
    return script.runInContext(sandbox, { timeout: ms }) as T;
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') throw new DeadlineExceeded(ms);
    throw err;
  } finally {
    sandbox.run = null;
  }
}
