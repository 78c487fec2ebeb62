import { credentialPath } from '../../runner/credential.js';

/** The advice the runner and the server end a revoked runner's message with: true, but not all one must do. */
const SHORT_ADVICE = /[:;] register (?:it )?again with a new registration token\.?$/;

/** A revoked runner's message without its short advice ("register it again with a new registration token"), for a caller that gives its own steps (`flotilla up`). */
export function withoutShortAdvice(message: string): string {
  return message.replace(SHORT_ADVICE, '');
}

/**
 * A revoked runner's message (`server URL revoked this runner (close 4403: ...): register it
 * again with a new registration token`, or the server's refusal of its credential at start) with
 * the complete steps instead of the short advice: a new token given with `--token` replaces the
 * revoked credential in the work folder (runner/runner.ts registerIfRevoked), so the runner
 * registers as a new one. Messages without that advice come back as they are.
 */
export function revokedRunnerMessage(message: string, workDir: string): string {
  if (!SHORT_ADVICE.test(message)) return message;
  return `${message.replace(SHORT_ADVICE, '')}. To run this machine as a runner again: make a new registration token with \`flotilla runners token create\`, then start \`flotilla runner --token <new token>\` again (it replaces the revoked credential in ${credentialPath(workDir)})`;
}
