import type { JobResult } from '../api.js';

/** Keys a harness or agent may put a change (pull/merge request) URL under in the result; the first http(s) one is shown. */
const CHANGE_KEYS = ['changeUrl', 'pullRequestUrl', 'prUrl', 'mergeRequestUrl', 'url'] as const;

/** The change link of a result, or null: only `http:`/`https:` URLs (never `javascript:`). */
export function changeLink(result: JobResult): string | null {
  for (const k of CHANGE_KEYS) {
    const v = (result as Record<string, unknown>)[k];
    if (typeof v !== 'string') continue;
    try {
      const u = new URL(v);
      if (u.protocol === 'http:' || u.protocol === 'https:') return u.href;
    } catch {
      // not a URL: try the next key
    }
  }
  return null;
}

/** A job's result: branch, commit, change link, changed files, summary, needs-a-human flag. */
export function ResultBox({ result }: { result: JobResult }) {
  const link = changeLink(result);
  const files = result.changedFiles ?? [];
  return (
    <div className="card" data-testid="result">
      <h3>Result</h3>
      <dl>
        <dt>Branch</dt>
        <dd>{result.branch ? <code data-testid="result-branch">{result.branch}</code> : '—'}</dd>
        <dt>Commit</dt>
        <dd>
          {result.commit ? (
            <code data-testid="result-commit" title={result.commit}>
              {result.commit.slice(0, 12)}
            </code>
          ) : (
            '—'
          )}
        </dd>
        <dt>Change</dt>
        <dd>
          {link ? (
            <a href={link} target="_blank" rel="noopener noreferrer" data-testid="result-change">
              {link}
            </a>
          ) : (
            '—'
          )}
        </dd>
        {files.length > 0 && (
          <>
            <dt>Files</dt>
            <dd data-testid="result-files">{files.length <= 5 ? files.join(', ') : `${files.slice(0, 5).join(', ')} and ${files.length - 5} more`}</dd>
          </>
        )}
      </dl>
      {result.needsHuman && <p className="warn">Needs a person to look at it.</p>}
      {result.summary && <p className="summary">{result.summary}</p>}
    </div>
  );
}
