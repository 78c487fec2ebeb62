import { Option } from 'commander';

/** The options made by {@link listOption}: refuseRepeatedOptions (repeated-options.ts) lets them repeat. */
export const LIST_OPTIONS = new WeakSet<Option>();

/**
 * An option that takes one value per use and may be given again for more (`--agents A
 * --agents B`), its values collected in order into a string array; its environment variable
 * gives one value, and is not read when the option is on the command line (commander). Not
 * commander's `<dir...>`: that form takes every word after it, the command's own arguments too
 * (`flotilla run --local --agents DIR caller '{...}'` read `caller` and the input as folders and
 * failed "missing required argument 'agent'": tester finding).
 */
export function listOption(flags: string, description: string): Option {
  const o = new Option(flags, `${description} (repeat the option for more)`).argParser((value: string, prev: unknown) => [...(Array.isArray(prev) ? (prev as string[]) : []), value]);
  LIST_OPTIONS.add(o);
  return o;
}
