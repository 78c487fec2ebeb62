/**
 * A Flotilla setting read from the environment (`FLOTILLA_*`), trimmed: undefined when the
 * variable is unset. Set but blank (`FLOTILLA_CONFIG=`, as a script's unset variable expands)
 * is refused, not read as unset: the server would otherwise start quietly on defaults (another
 * config file, other retries) instead of the setting its operator meant. The providers' own
 * variables (ANTHROPIC_API_KEY, OPENAI_BASE_URL, ...) keep their convention, blank = unset.
 * @throws SettingError `FLOTILLA_CONFIG is set to "": give a value, or unset FLOTILLA_CONFIG`.
 */
export function settingFromEnv(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const raw = env[name];
  if (raw === undefined) return undefined;
  const v = raw.trim();
  if (v === '') throw new SettingError(`${name} is set to "": give a value, or unset ${name}`);
  return v;
}

/**
 * A whole-number setting (`FLOTILLA_GATEWAY_RETRIES`, `..._BUDGET_WAIT_MS`, ...): undefined when
 * unset, else its value, which must be digits only (no sign, fraction, exponent, nor spaces
 * around it: as the CLI's number flags, README) from `min` to `max`. `what` names the unit in
 * the message (`a whole number`, `milliseconds`).
 * @throws SettingError blank as {@link settingFromEnv}; else `FLOTILLA_GATEWAY_RETRIES must be a whole number from 0 to 10, got " 2"`.
 */
export function intSettingFromEnv(env: NodeJS.ProcessEnv, name: string, min: number, max: number, what = 'a whole number'): number | undefined {
  if (settingFromEnv(env, name) === undefined) return undefined;
  const raw = env[name]!;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < min || n > max) throw new SettingError(`${name} must be ${what} from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  return n;
}

/**
 * A `FLOTILLA_*` setting (or the config file it names) with a value the server cannot use; the
 * message names the variable and what is wrong. A usage error as a bad flag is: the CLI exits 2
 * for both (cli/main.ts), so `FLOTILLA_PORT=abc` and `FLOTILLA_TREE_MAX_DEPTH=abc` end alike.
 */
export class SettingError extends Error {
  override readonly name = 'SettingError';
}
