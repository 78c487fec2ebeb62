import { useState } from 'react';
import { client, errorText, type ConversationInput, type ConversationTurn, type TaskConversation } from '../api.js';
import { when } from '../format.js';
import { Link } from '../router.js';
import { JobStatusBadge } from './status.js';

/** One thing that woke the task: a person's prompt, or an event with its source and the text the agent was shown. */
function InputLine({ x }: { x: ConversationInput }) {
  return (
    <div className={`msg ${x.source === 'prompt' ? 'user' : 'event'}`} data-testid={`turn-${x.source}`}>
      <span className="who">
        {x.source === 'prompt' ? 'prompt' : x.kind}
        {x.actor ? ` · ${x.actor}` : ''}
        {x.receiver ? ` · via ${x.receiver}` : ''} · {when(x.at)}
      </span>
      <div className="text">{x.text}</div>
    </div>
  );
}

/** One turn: what woke it, then the agent's replies (the `message` events of the job that ran it), with the job linked. */
function TurnView({ t }: { t: ConversationTurn }) {
  return (
    <div className="turn" data-testid={`turn-${t.turn}`}>
      <div className="sys">
        turn {t.turn}
        {t.startedAt ? ` · ${when(t.startedAt)}` : ''} ·{' '}
        {t.jobId ? (
          <>
            <Link to={`/jobs/${t.jobId}`} className="turn-job">
              job #{t.jobId}
            </Link>{' '}
            {t.jobStatus && <JobStatusBadge status={t.jobStatus} testid="turn-job-status" />}
          </>
        ) : (
          'no job recorded'
        )}
      </div>
      {t.inputs.map((x) => (
        <InputLine key={`${x.source}${x.id}`} x={x} />
      ))}
      {t.repliesTruncated && <div className="sys">… earlier replies are on the job’s page</div>}
      {t.replies.map((m) => (
        <div key={m.seq} className={`msg ${m.role}`} data-testid="turn-reply">
          <span className="who">{m.role === 'assistant' ? 'agent' : m.role}</span>
          <div className="text">{m.text}</div>
        </div>
      ))}
      {t.replies.length === 0 && t.jobId && <div className="sys">{t.jobStatus === 'running' || t.jobStatus === 'queued' || t.jobStatus === 'assigned' ? 'working…' : 'no reply'}</div>}
    </div>
  );
}

/**
 * A task's turns as a conversation (issue 8, tasks page), from `GET /api/tasks/:id/conversation`:
 * each turn's prompts and events, then the agent's replies, the job of each turn linked; older
 * turns on demand; what is queued for the next turn at the end (a prompt queued from the box
 * shows there, then in its turn once a turn takes it).
 */
export function ConversationView({ conv }: { conv: TaskConversation }) {
  const [older, setOlder] = useState<ConversationTurn[]>([]);
  const [cursor, setCursor] = useState<number | null | undefined>(undefined);
  const [error, setError] = useState('');
  const next = cursor === undefined ? conv.olderBefore : cursor;
  const loadOlder = async () => {
    if (next === null) return;
    try {
      const page = await client.getTaskConversation(conv.task.id, { before: next });
      setOlder((xs) => [...page.turns, ...xs]);
      setCursor(page.olderBefore);
    } catch (e) {
      setError(errorText(e));
    }
  };
  const shown = new Set(conv.turns.map((t) => t.turn));
  const turns = [...older.filter((t) => !shown.has(t.turn)), ...conv.turns];
  return (
    <div data-testid="turns">
      {next !== null && (
        <button type="button" onClick={() => void loadOlder()} data-testid="older-turns">
          Older turns
        </button>
      )}
      {error && <p className="error">{error}</p>}
      {turns.length === 0 && conv.queued.length === 0 && <p className="muted">No turns yet.</p>}
      {turns.map((t) => (
        <TurnView key={t.turn} t={t} />
      ))}
      {conv.queued.length > 0 && (
        <div className="turn" data-testid="queued-prompts">
          <div className="sys">queued for the next turn</div>
          {conv.queued.map((x) => (
            <InputLine key={`${x.source}${x.id}`} x={x} />
          ))}
        </div>
      )}
    </div>
  );
}
