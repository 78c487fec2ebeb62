// Test helpers for the webhook suites (not imported by production code): real payloads from
// @octokit/webhooks-examples, signing as GitHub and Gitea do, and polling.
import { createHmac } from 'node:crypto';
import { createRequire } from 'node:module';
import { sign } from '@octokit/webhooks-methods';

type Example = { name: string; examples: Record<string, unknown>[] };
const examples = createRequire(import.meta.url)('@octokit/webhooks-examples') as Example[];

/** A deep copy of the first real GitHub example of `event` with `action` (e.g. issues/assigned). */
export function githubExample(event: string, action: string): Record<string, unknown> {
  const e = examples.find((x) => x.name === event)?.examples.find((x) => x.action === action);
  if (!e) throw new Error(`no @octokit/webhooks-examples payload for ${event}.${action}`);
  return structuredClone(e);
}

/** POSTs `raw` (exact bytes) to a GitHub receiver, signed with `secret` unless `signature` is given. */
export async function postGithub(url: string, secret: string, event: string, raw: string, opts: { delivery?: string; signature?: string | null } = {}): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-github-event': event, 'x-github-delivery': opts.delivery ?? crypto.randomUUID() };
  const sig = opts.signature === undefined ? await sign(secret, raw) : opts.signature;
  if (sig !== null) headers['x-hub-signature-256'] = sig;
  return fetch(url, { method: 'POST', headers, body: raw });
}

/** Gitea's bare-hex HMAC-SHA256 of the body. */
export function giteaSignature(secret: string, raw: string | Uint8Array): string {
  return createHmac('sha256', secret).update(raw).digest('hex');
}

/** Polls `fn` until it returns a truthy value (or throws after `timeoutMs`). */
export async function until<T>(fn: () => Promise<T | null | undefined | false>, timeoutMs = 15_000, what = 'condition'): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
