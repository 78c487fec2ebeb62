/**
 * A Flotilla setting read from the environment (`FLOTILLA_*`), trimmed: undefined when the
 * variable is unset. Set but blank (`FLOTILLA_CONFIG=`, as a script's unset variable expands)
 * is refused, not read as unset: the server would otherwise start quietly on defaults (another
 * config file, other retries) instead of the setting its operator meant. The providers' own
 * variables (ANTHROPIC_API_KEY, OPENAI_BASE_URL, ...) keep their convention, blank = unset.
 * @throws Error `FLOTILLA_CONFIG is set to "": give a value, or unset FLOTILLA_CONFIG`.
 */
export function settingFromEnv(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const raw = env[name];
  if (raw === undefined) return undefined;
  const v = raw.trim();
  if (v === '') throw new Error(`${name} is set to "": give a value, or unset ${name}`);
  return v;
}
