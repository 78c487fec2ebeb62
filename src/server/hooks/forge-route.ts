/**
 * Turns a GitHub or Gitea/Forgejo webhook payload into a routed event (issue 7, "Routing"):
 * issue, pull request and comment events → the issue's or PR's html URL without its scheme
 * (`github.com/acme/api/issues/42`) as resource key. Gitea sends GitHub-shaped payloads for
 * these events (`issue`, `pull_request`, `comment`, `sender`), so one function serves both.
 */
export interface RoutedEvent {
  key: string | null;
  /** `<event>.<action>`, e.g. `issue_comment.created`. */
  kind: string;
  actor: string | null;
  summary: string;
  /** epoch ms */
  occurredAt: number;
  /** What a policy may act on. */
  action: 'assigned' | 'closed' | 'reopened' | null;
  /** For `assigned`: the logins assigned (GitHub: the one just assigned; Gitea: the item's assignees). */
  assignees: string[];
  /** Human title for a task created from it. */
  title: string;
}

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj | null => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : null);
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/** `https://github.com/a/b/issues/1` → `github.com/a/b/issues/1`. */
export function keyOfUrl(url: string): string {
  return url.replace(/^[a-z]+:\/\//i, '').replace(/\/+$/, '');
}

function time(...candidates: unknown[]): number | null {
  for (const c of candidates) {
    const s = str(c);
    if (s) {
      const t = Date.parse(s);
      if (Number.isFinite(t)) return t;
    }
  }
  return null;
}

const MAX_BODY = 20_000;
const clip = (s: string | null) => (s === null ? '' : s.length > MAX_BODY ? `${s.slice(0, MAX_BODY)} [... cut]` : s);

function assigneesOf(payload: Obj, item: Obj | null): string[] {
  const one = str(obj(payload.assignee)?.login);
  if (one) return [one];
  const list = Array.isArray(item?.assignees) ? (item.assignees as unknown[]) : [item?.assignee];
  return list.map((a) => str(obj(a)?.login)).filter((x): x is string => x !== null);
}

/**
 * Routes one forge event. `event` is the `X-GitHub-Event` / `X-Gitea-Event` header; `now`
 * epoch ms (used when the payload carries no time). Events that carry no issue or pull
 * request get key null (recorded as unmatched or for the fallback task).
 */
export function routeForgeEvent(event: string, payload: Obj, now: number): RoutedEvent {
  const action = str(payload.action);
  const kind = action ? `${event}.${action}` : event;
  const actor = str(obj(payload.sender)?.login) ?? str(obj(payload.sender)?.username);
  const issue = obj(payload.issue);
  const pr = obj(payload.pull_request);
  const comment = obj(payload.comment);
  const review = obj(payload.review);
  const item = pr ?? issue;
  const url = str(item?.html_url);
  const number = item?.number;
  const isPr = pr !== null || obj(issue?.pull_request) !== null;
  const noun = `${isPr ? 'pull request' : 'issue'} #${String(number ?? '?')}`;
  const title = str(item?.title) ?? '';
  let summary: string;
  if (comment && (event === 'issue_comment' || event === 'pull_request_review_comment')) summary = `${action ?? 'wrote'} a comment on ${noun}:\n${clip(str(comment.body))}`;
  else if (review) summary = `${action ?? 'submitted'} a review (${str(review.state) ?? '?'}) on ${noun}:\n${clip(str(review.body))}`;
  else if (action === 'assigned' || action === 'unassigned') summary = `${action} ${noun} "${title}" ${action === 'assigned' ? 'to' : 'from'} ${str(obj(payload.assignee)?.login) ?? '?'}${action === 'assigned' ? `:\n${clip(str(item?.body))}` : ''}`;
  else if (action === 'opened') summary = `opened ${noun} "${title}":\n${clip(str(item?.body))}`;
  else if (action === 'labeled' || action === 'unlabeled') summary = `${action} ${noun} with "${str(obj(payload.label)?.name) ?? '?'}"`;
  else summary = `${action ?? event} ${item ? `${noun} "${title}"` : str(obj(payload.repository)?.full_name) ?? ''}`.trim();
  const occurredAt = time(comment?.updated_at, comment?.created_at, review?.submitted_at, item?.updated_at, item?.created_at) ?? now;
  const policyAction = action === 'assigned' || action === 'closed' || action === 'reopened' ? action : null;
  return {
    key: url ? keyOfUrl(url) : null,
    kind,
    actor,
    summary,
    occurredAt,
    action: event === 'issue_comment' ? null : policyAction,
    assignees: action === 'assigned' ? assigneesOf(payload, item) : [],
    title: title ? `${noun}: ${title}` : noun,
  };
}
