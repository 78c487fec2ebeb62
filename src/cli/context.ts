import type { CreateJobInput } from '../client/index.js';
import type { CliIO } from './io.js';

/** What `flotilla run --local` needs (implemented in local/run-local.ts, loaded on demand). */
export interface RunLocalParams {
  request: CreateJobInput;
  /** Data folder: store, admin token, `runner/` work folder. */
  data: string;
  /** Extra agent folders, on top of `<package root>/agents`. */
  agentsDirs: string[];
  /** With `--repo-base`: where the local runner resolves repo paths (default: the current folder). */
  repoBaseDir?: string;
  json: boolean;
  io: CliIO;
}

/** Shared by every command's action: where to write, and how to report the exit code. */
export interface CliContext {
  io: CliIO;
  /** Sets the exit code `main()` returns. */
  setExit(code: number): void;
  /** Runs a job on an in-process server and runner; returns the exit code. */
  runLocal(params: RunLocalParams): Promise<number>;
}
