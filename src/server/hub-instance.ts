import type { RunnerInstanceHolder } from '../store/runner-instance.js';
import type { Connection } from './hub-connection.js';
import type { HubOptions } from './hub.js';

// One runner credential, one runner process (issue "never run a job twice"): what a second
// process using the same credential is told when the hub refuses it (hub.ts, close 4409).

/** The close code of a refused second process (hub.ts CLOSE_CODES.credentialInUse). */
export const CLOSE_CREDENTIAL_IN_USE = 4409;

/** The close reason of a refused second process (a close reason is at most 123 bytes; the `error` frame before it says it all). */
export const CREDENTIAL_IN_USE_REASON = 'runner credential in use by another runner process';

/**
 * The full refusal a second runner process gets in its `error` frame: another process is
 * connected with this credential (runner name and id, its version, since when and when last
 * heard, server clock), nothing of it was touched, and each runner process needs its own
 * registration. `now` and the holder's times are epoch ms; `timeoutMs` the heartbeat timeout
 * after which a silent holder is replaced.
 */
export function credentialInUseMessage(runnerId: number, holder: RunnerInstanceHolder, now: number, timeoutMs: number): string {
  const facts = [`runner ${holder.name} (id ${runnerId})`];
  if (holder.version) facts.push(`version ${holder.version}`);
  if (holder.since !== null) facts.push(`connected since ${new Date(holder.since).toISOString()}`);
  if (holder.lastHeartbeatAt !== null) facts.push(`last heard ${Math.max(0, Math.round((now - holder.lastHeartbeatAt) / 1000))}s ago`);
  return (
    `another runner process is connected with this runner credential (${facts.join(', ')}); ` +
    'this process was refused so that no job runs twice, and the other one keeps its jobs. ' +
    'Each runner process needs its own registration: create a token with `flotilla runners token create` ' +
    'and start this one with `flotilla runner --token <token>` and a work folder of its own (--work-dir), ' +
    'not a copy of the other one’s. ' +
    `If the other process is gone (its machine went away without closing the connection), the credential is free ${Math.round(timeoutMs / 1000)}s after its last heartbeat.`
  );
}

/**
 * Refuses `conn`, a second runner process with this credential while `holder` is live (store
 * claimRunnerInstance said `in_use`): an `error` frame with {@link credentialInUseMessage},
 * then close 4409 (hub.ts CLOSE_CODES.credentialInUse). The caller marks `conn` dead first.
 * Nothing else changes: the live connection and its jobs are untouched.
 */
export async function refuseSecondProcess(o: Pick<HubOptions, 'log' | 'heartbeatTimeoutMs'>, conn: Connection, holder: RunnerInstanceHolder, now: number): Promise<void> {
  const message = credentialInUseMessage(conn.runnerId, holder, now, o.heartbeatTimeoutMs);
  o.log.warn('refused a second runner process using the same runner credential', { runnerId: conn.runnerId, instance: conn.instance, holder: holder.instance });
  await conn.send({ type: 'error', message });
  conn.ws.close(CLOSE_CREDENTIAL_IN_USE, CREDENTIAL_IN_USE_REASON);
}
