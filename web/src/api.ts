// The dashboard's only way to the server: the client SDK (src/client), with the browser's
// session cookie instead of a token. Every page gets data through the hooks below.
import { useCallback, useEffect, useRef, useState } from 'react';
import { FlotillaClient } from '../../src/client/client.js';
import { ApiError } from '../../src/client/errors.js';

export { ApiError };
export { errorText } from './format.js';
export type { Job, JobEvent, Runner, AgentDefinition, Principal, User, ApiTokenInfo, JobStatus, JobUsage, CostRollup, JobResult, RunnerDetail, JobTree, JobTreeNode, ModelRoutesView, ModelPrice, PriceInEffect, ProviderName, Task, TaskEvent, TaskStatus, Receiver, ReceiverProvider, TaskConversation, ConversationTurn, ConversationInput, RunnerActivityEntry, JobEventPage, RunnerTokenInfo, BudgetView } from '../../src/protocol/index.js';

/** The SDK pointed at the server that served this page; same-origin cookies carry the session. */
export const client = new FlotillaClient({ url: window.location.origin });

/** Result of {@link useApi}: the latest value, the last error, and a reload function. */
export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | Error | undefined;
  reload: () => void;
}

/**
 * Calls `load` now, whenever `deps` change, and every `everyMs` (0 = once). Keeps the last good
 * value on a failed refresh. A 401 sends the app back to sign-in (see app.tsx).
 */
export function useApi<T>(load: () => Promise<T>, deps: unknown[], everyMs = 0): Loaded<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<ApiError | Error>();
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  useEffect(() => {
    let live = true;
    const run = () =>
      loadRef.current().then(
        (v) => {
          if (!live) return;
          setData(v);
          setError(undefined);
        },
        (e: unknown) => {
          if (!live) return;
          if (e instanceof ApiError && e.status === 401) window.dispatchEvent(new Event('flotilla:signed-out'));
          setError(e instanceof Error ? e : new Error(String(e)));
        },
      );
    void run();
    const t = everyMs > 0 ? window.setInterval(run, everyMs) : 0;
    return () => {
      live = false;
      if (t) window.clearInterval(t);
    };
  }, [...deps, tick, everyMs]);
  const reload = useCallback(() => setTick((n) => n + 1), []);
  return { data, error, reload };
}

