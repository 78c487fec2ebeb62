import { readFileSync } from 'node:fs';
import type { RunnerToServer } from '../protocol/index.js';
import { noteRunner, type RunnerHistoryDeps } from './runner-history.js';

/**
 * How long a runner has to answer `runner.update` (its first `runner.update` report) before
 * this server stops counting it as updating, ms. An older runner refuses the frame (it fails
 * its schema) and would otherwise never get a job again.
 */
export const UPDATE_ACK_MS = 60_000;

/**
 * How long a runner that went away while updating (it re-executes itself, or lost its
 * connection mid-update) still counts as updating here, ms. Its status turns `offline` sooner
 * by the heartbeat rules (views.ts runnerStatus); this only bounds the memory of it.
 */
export const UPDATE_AWAY_MS = 10 * 60_000;

/** The server's own version (package.json): what `runner.update` asks for when no version is given. */
export const SERVER_VERSION: string = readVersion();

type Phase = 'requested' | 'draining' | 'installing' | 'restarting';

interface UpdateState {
  /** The version asked for. */
  version: string;
  phase: Phase;
  /** After this time (epoch ms, server clock) the runner no longer counts as updating; Infinity while it reports in. */
  lapseAt: number;
  /** The runner's version when the update was asked for (for the `updated` note). */
  from: string | null;
}

/** What {@link RunnerUpdates} needs: the runner history (notes) and the clock. */
export type RunnerUpdatesDeps = RunnerHistoryDeps;

/**
 * Runner self-updates this server asked for or was told about (issue 5, status `updating`),
 * kept in memory beside the live connections (hub.ts): an updating runner gets no new job here
 * (hub `connections()` leaves it out) and reads `updating` in the API while its connection or,
 * after it went away to re-execute, its last heartbeat is fresh. Every step is a line of the
 * runner's history (kinds `update`, `update_failed`). A server restart forgets the marks; a
 * runner still updating says so in its next `hello` (`updating`), which marks it again.
 */
export class RunnerUpdates {
  private readonly m = new Map<number, UpdateState>();

  constructor(private readonly d: RunnerUpdatesDeps) {}

  /** True while runner `id` counts as updating; a mark past its lapse time is dropped (and noted when the runner never answered). */
  has(id: number): boolean {
    const s = this.m.get(id);
    if (!s) return false;
    if (this.d.now() <= s.lapseAt) return true;
    this.m.delete(id);
    if (s.phase === 'requested') void noteRunner(this.d, id, 'update_failed', `update to ${s.version}: the runner did not answer within ${UPDATE_ACK_MS / 1000} s (an older runner cannot update itself); it takes jobs again`);
    return false;
  }

  /**
   * Marks runner `id` updating to `version` (asked by `by`), before the frame goes out, so no job
   * is sent to it meanwhile. False when it is already updating (nothing changes).
   */
  begin(id: number, version: string, from: string | null, by: string): boolean {
    if (this.has(id)) return false;
    this.m.set(id, { version, phase: 'requested', lapseAt: this.d.now() + UPDATE_ACK_MS, from });
    void noteRunner(this.d, id, 'update', `update to ${version} requested by ${by}`);
    return true;
  }

  /** The frame could not be sent: forget the mark made by {@link begin}. */
  cancel(id: number): void {
    this.m.delete(id);
  }

  /**
   * A `runner.update` report from the runner. Returns true when the runner takes jobs again
   * (the update failed): the caller kicks dispatch.
   */
  report(id: number, msg: Extract<RunnerToServer, { type: 'runner.update' }>): boolean {
    const s = this.m.get(id);
    if (msg.phase === 'failed') {
      this.m.delete(id);
      const code = msg.exitCode === undefined ? '' : msg.exitCode === null ? ' (the command did not exit: killed or not started)' : ` (exit code ${msg.exitCode})`;
      void noteRunner(this.d, id, 'update_failed', `update to ${msg.version} failed${code}${msg.detail ? `: ${msg.detail}` : ''}; it takes jobs again`.slice(0, 1000));
      return true;
    }
    const state: UpdateState = s ?? { version: msg.version, phase: msg.phase, lapseAt: Infinity, from: null };
    const was = state.phase;
    state.phase = msg.phase;
    state.lapseAt = Infinity;
    this.m.set(id, state);
    if (msg.phase === 'installing' && was !== 'installing') void noteRunner(this.d, id, 'update', `update to ${msg.version}: running the update command`);
    if (msg.phase === 'restarting' && was !== 'restarting') void noteRunner(this.d, id, 'update', `update to ${msg.version} installed; the runner restarts on it`);
    return false;
  }

  /**
   * The runner's `hello`: `updating` (the version it is updating to) keeps or makes the mark;
   * without it the update is over: a runner that went away to restart is noted back on
   * `version`.
   */
  hello(id: number, updating: string | undefined, version: string): void {
    const s = this.m.get(id);
    if (updating !== undefined) {
      this.m.set(id, { version: updating, phase: s?.phase ?? 'draining', lapseAt: Infinity, from: s?.from ?? null });
      return;
    }
    if (!s) return;
    this.m.delete(id);
    if (s.phase === 'restarting') void noteRunner(this.d, id, 'update', `back after the update to ${s.version}: version ${s.from && s.from !== version ? `${s.from} → ` : ''}${version}`);
    else if (s.phase !== 'requested') void noteRunner(this.d, id, 'update_failed', `update to ${s.version} abandoned: the runner came back without it`);
  }

  /** Runner `id`'s connection closed: a mark it has lapses after {@link UPDATE_AWAY_MS}. */
  disconnected(id: number): void {
    const s = this.m.get(id);
    if (s) s.lapseAt = this.d.now() + (s.phase === 'requested' ? Math.min(UPDATE_ACK_MS, UPDATE_AWAY_MS) : UPDATE_AWAY_MS);
  }
}

function readVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string };
    return pkg.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}
