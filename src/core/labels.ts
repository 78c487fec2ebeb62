import type { Labels } from '../protocol/index.js';

/**
 * True when every `key=value` of `selector` is among `labels` (a job's selector matches a
 * runner). An empty selector matches every runner.
 */
export function selectorMatches(selector: Labels, labels: Labels): boolean {
  // No entries array per call: the dispatcher asks this for every open runner of every queued job.
  for (const k in selector) {
    if (Object.hasOwn(selector, k) && labels[k] !== selector[k]) return false;
  }
  return true;
}

/** The job's selector: the agent's runner labels overlaid with the run's extra labels (the run wins). */
export function mergeSelector(agentLabels: Labels, runLabels: Labels | undefined): Labels {
  return { ...agentLabels, ...(runLabels ?? {}) };
}
