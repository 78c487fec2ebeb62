import type { Labels } from '../protocol/index.js';

/**
 * A runner's effective labels: its registration token's labels (`bound`) are binding, its own
 * labels (`own`, from `flotilla runner --labels/--role` in its `hello`) may only add keys the
 * token did not set. Returns the labels and the own keys that were refused (a different value
 * for a bound key), so the caller can say so.
 * Rule from issue 5 (security finding 1a): token labels must not be overridden or dropped.
 */
export function bindLabels(bound: Labels, own: Labels): { labels: Labels; refused: string[] } {
  // own keys only: a label `constructor` is not bound by Object.prototype's
  const refused = Object.keys(own).filter((k) => Object.hasOwn(bound, k) && own[k] !== bound[k]);
  return { labels: { ...own, ...bound }, refused };
}
