import { readFile, stat } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { MAX_ID, PLAIN_DECIMAL, RoleName, RunnerName, parseLabelList, type Labels } from '../protocol/index.js';
import { ApiError, FlotillaClient } from '../client/index.js';
import { causeOf } from '../client/util.js';
import { makeDir, MakeDirError } from '../core/make-dir.js';
import { cutEcho } from '../protocol/echo.js';
import { adminTokenProof } from '../core/tokens.js';

/** Default control-plane URL when neither `--server` nor `FLOTILLA_SERVER` is given. */
export const DEFAULT_SERVER = 'http://127.0.0.1:8787';

/** Default data folder: `~/.flotilla` (`FLOTILLA_DATA` overrides, `--data` overrides both). */
export function defaultDataDir(): string {
  return join(homedir(), '.flotilla');
}

/**
 * A user-facing CLI error: printed as `flotilla: <message>`, exit code 1 (2 when `usage`).
 * `code`: the `--json` error code (main.ts), e.g. `not_found` as the API says it for an unknown
 * id; default `usage` for exit code 2, else `error`.
 */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
    readonly code?: string,
  ) {
    super(message);
  }
}

/**
 * Refuses an empty (or all-blank) value of a string option that was given — on the command
 * line (`--parent-token ""`) or by its variable set to nothing (`FLOTILLA_PARENT_TOKEN=`, e.g. a
 * script's `$FLOTILLA_JOB_TOKEN` that expanded to nothing): an empty value must never silently
 * mean "unset" (a new root job with the admin token, the default server, the current folder,
 * every network interface). Nothing to check when `value` is undefined (not given).
 * `from`: where the value came from (commander's `getOptionValueSource`: `cli`, `env`), when
 * known; else both the flag and the variable are named.
 * @throws CliError (exit 2): `--parent-token is empty (FLOTILLA_PARENT_TOKEN is set to ""): give a value, or unset FLOTILLA_PARENT_TOKEN`.
 */
export function refuseEmpty(value: string | undefined, flag: string, envVar?: string, from?: string): void {
  if (value === undefined || value.trim() !== '') return;
  if (from === 'cli' || !envVar) throw new CliError(`${flag} is empty: give a value, or leave ${flag} out`, 2);
  if (from === 'env') throw new CliError(`${flag} is empty (${envVar} is set to ""): give a value, or unset ${envVar}`, 2);
  throw new CliError(`${flag} is empty (from ${flag} or ${envVar}): give a value, or leave it out`, 2);
}

/**
 * {@link refuseEmpty} for the options `keys` (attribute names: `parentToken`) of `cmd`, naming
 * each option's flag and variable, and where the empty value came from.
 * @throws CliError (exit 2) for the first option given an empty value.
 */
export function refuseEmptyOptions(cmd: Command, keys: readonly string[]): void {
  const values = cmd.opts<Record<string, unknown>>();
  for (const key of keys) {
    const o = cmd.options.find((opt) => opt.attributeName() === key);
    if (!o) throw new Error(`refuseEmptyOptions: ${cmd.name()} has no option ${key}`);
    const v = values[key];
    if (typeof v === 'string') refuseEmpty(v, o.long ?? o.flags, o.envVar, cmd.getOptionValueSource(key));
  }
}

/**
 * Refuses a label-list option (`--labels`, `--label`: parsed by {@link parseLabels}) given
 * but naming no label — `--labels ""`, its variable set to nothing (a script's `$LABELS` that
 * expanded to nothing), or only blanks and commas — as {@link refuseEmpty} refuses an empty
 * string option: it must never silently mean "no labels" (an unbound runner token, every runner,
 * a job placed on any runner). `key`: the option's attribute name in `cmd`. Nothing to check
 * when the option was not given (`labels` undefined).
 * @throws CliError (exit 2): `--labels is empty (FLOTILLA_RUN_LABELS is set to ""): give a value, or unset FLOTILLA_RUN_LABELS`.
 */
export function refuseEmptyLabels(cmd: Command, labels: Labels | undefined, key: string): void {
  if (labels === undefined || Object.keys(labels).length > 0) return;
  const o = cmd.options.find((opt) => opt.attributeName() === key);
  if (!o) throw new Error(`refuseEmptyLabels: ${cmd.name()} has no option ${key}`);
  refuseEmpty('', o.long ?? o.flags, o.envVar, cmd.getOptionValueSource(key));
}

/**
 * Checks that a folder option (`--data`, `--work-dir`) names a folder or a path one can be made
 * at: the path itself, or its nearest existing parent, must be a folder. An empty path (the
 * current folder, by `resolve`) is refused ({@link refuseEmpty}; `envVar` names the variable).
 * @throws CliError (exit 2) `--data /etc/passwd is not a folder` (or naming the parent in the way); `--data is empty ...`.
 */
export async function checkFolderOption(flag: string, path: string, envVar?: string): Promise<void> {
  refuseEmpty(path, flag, envVar);
  let at = resolve(path);
  for (;;) {
    const st = await stat(at).catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' || err.code === 'ENOTDIR' ? null : err));
    if (st instanceof Error) return; // e.g. EACCES: let the real operation report it
    if (st) {
      if (st.isDirectory()) return;
      throw new CliError(at === resolve(path) ? `${flag} ${path} is not a folder` : `${flag} ${path}: ${at} is not a folder`, 2);
    }
    const up = dirname(at);
    if (up === at) return;
    at = up;
  }
}

/**
 * Makes the folder of a folder option (`--work-dir`, `--data`) and the folders above it that are
 * missing (core/make-dir.ts: fails at once where Node's own recursive mkdir would spin for
 * ever, e.g. under /proc). `mode` for the folders it makes.
 * @throws CliError (exit 1) naming the option, the folder and the OS error:
 *   `--work-dir /proc/nope: cannot create folder /proc/nope: ENOENT: no such file or directory (...)`.
 */
export async function makeFolderOption(flag: string, path: string, mode?: number): Promise<void> {
  try {
    await makeDir(path, mode);
  } catch (err) {
    if (err instanceof MakeDirError) throw new CliError(`${flag} ${path}: ${err.message}`, 1);
    throw err;
  }
}

// --- argument parsers (commander argParser: throw InvalidArgumentError naming the problem) ---

/** What {@link usdArg} accepts beyond the plain-decimal form: its range and how to name it. */
export interface UsdArgSpec {
  /** What the amount is, for errors: `a positive number of US dollars`, `USD per million tokens (...)`. */
  what: string;
  /** Smallest accepted value, USD (0 allows 0). */
  min: number;
  /** Largest accepted value, USD. */
  max: number;
  /** Said after `at least <min>` when below it, e.g. ` dollars (one micro-dollar)`. */
  minNote?: string;
}

/**
 * The only form a USD amount is taken in: digits with an optional fraction (`5`, `0.5`), or a
 * fraction alone (`.5` = 0.5). No sign, exponent, hex, spaces, commas, trailing dot (`5.`).
 */

/** Most decimal places a USD amount may have: 6, one micro-dollar (µ$, the unit money is kept in). */
export const USD_MAX_DECIMALS = 6;

/**
 * The argParser of a USD amount option (`--budget`, `--add`, `models price --input`, ...): one
 * parser for all of them. Takes only a plain decimal — digits with an optional fraction, or a
 * fraction alone: `1`, `0.5`, `.5` (= 0.5), `12.25` — with at most {@link USD_MAX_DECIMALS}
 * decimals, where `Number()` would also take `0x10` (16), `1e3`, `+5`, ` 5`, `5.`, `Infinity`
 * or an empty string. The range `spec.min`..`spec.max` is checked before the decimals (a
 * budget of `0.0000001` is named as under the least). A negative amount (`-1`, `-.5`) is
 * refused as having a sign.
 * @returns the amount in USD (a JS number).
 * @throws InvalidArgumentError (commander: exit 2) naming `flag` and the value given:
 *   `--budget must be a positive number of US dollars, a plain decimal such as 1 or 0.5 (...); got "0x10"`;
 *   `--input must have at most 6 decimals (the smallest step is 0.000001); got "0.1234567"`.
 */
export function usdArg(flag: string, spec: UsdArgSpec): (text: string) => number {
  return (text: string) => {
    const got = `got ${JSON.stringify(cutEcho(text))}`;
    const n = Number(text);
    if (!PLAIN_DECIMAL.test(text) || !Number.isFinite(n)) {
      throw new InvalidArgumentError(`${flag} must be ${spec.what}, a plain decimal such as 1 or 0.5 (or .5: digits and an optional fraction, no sign, exponent, hex, spaces, commas or trailing dot); ${got}`);
    }
    if (n < spec.min) throw new InvalidArgumentError(`${flag} must be ${spec.what}, at least ${spec.min}${spec.minNote ?? ''}; ${got}`);
    if (n > spec.max) throw new InvalidArgumentError(`${flag} must be at most ${spec.max}; ${got}`);
    if ((text.split('.')[1]?.length ?? 0) > USD_MAX_DECIMALS) {
      throw new InvalidArgumentError(`${flag} must have at most ${USD_MAX_DECIMALS} decimals (the smallest step is 0.000001); ${got}`);
    }
    return n;
  };
}

/** `--budget` / `--add`: US dollars as a plain decimal ({@link usdArg}), from 0.000001 (one micro-dollar) to 100,000. */
export function budgetArg(flag: string): (text: string) => number {
  return usdArg(flag, { what: 'a positive number of US dollars', min: 0.000001, max: 100_000, minNote: ' dollars (one micro-dollar)' });
}

/** `--budget`: {@link budgetArg} for the flag `--budget`. */
export const parseBudget = budgetArg('--budget');

/** `--labels k=v,k2=v2` → Labels; a `role` label must be a protocol RoleName (as `--role`). */
export function parseLabels(text: string): Labels {
  let labels: Labels;
  try {
    labels = parseLabelList(text);
  } catch (err) {
    throw new InvalidArgumentError(err instanceof Error ? err.message : String(err));
  }
  if (labels.role !== undefined) {
    const r = RoleName.safeParse(labels.role);
    if (!r.success) throw new InvalidArgumentError(`role=${labels.role}: ${r.error.issues[0]?.message ?? 'invalid role'}`);
  }
  return labels;
}

/**
 * `--role R` given with a `role=` label of another value in `--labels`/`--label` (`flag`):
 * which one was meant cannot be told, so neither wins silently.
 * @throws CliError (exit 2) naming both: `--role build conflicts with --labels role=gpu: give the role once`.
 */
export function checkRoleLabels(role: string | undefined, labels: Labels | undefined, flag = '--labels'): void {
  if (role !== undefined && labels?.role !== undefined && labels.role !== role) {
    throw new CliError(`--role ${role} conflicts with ${flag} role=${labels.role}: give the role once`, 2);
  }
}

/** `--name` of a runner: a protocol RunnerName (1–63 of `[A-Za-z0-9._-]`, first a letter or digit). */
export function parseRunnerName(text: string): string {
  const r = RunnerName.safeParse(text);
  if (!r.success) throw new InvalidArgumentError(r.error.issues[0]?.message ?? 'invalid runner name');
  return text;
}

/** `--role` (runner and run): a protocol RoleName, the same form as a runner name. */
export function parseRole(text: string): string {
  const r = RoleName.safeParse(text);
  if (!r.success) throw new InvalidArgumentError(r.error.issues[0]?.message ?? 'invalid role');
  return text;
}

/**
 * The argParser of a whole-number argument or option (`--priority`, `--capacity`, `--port`,
 * `--limit`, job and other ids: {@link parseIdArg}): digits with an optional `-`, from `min` to
 * `max`. Spaces around it are refused, as {@link usdArg} refuses them (`flotilla budget ' 1'`
 * was job 1 while `--add ' 1'` was refused).
 * @returns the number.
 * @throws InvalidArgumentError (commander: exit 2) naming `what`:
 *   `job id must be a whole number from 1 to 2147483647`;
 *   `job id must be a whole number from 1 to 2147483647, without spaces around it; got " 1"`.
 */
export function intIn(min: number, max: number, what: string): (text: string) => number {
  return (text: string) => {
    const n = Number(text);
    if (text !== text.trim()) throw new InvalidArgumentError(`${what} must be a whole number from ${min} to ${max}, without spaces around it; got ${JSON.stringify(cutEcho(text))}`);
    if (!/^-?\d+$/.test(text) || n < min || n > max) throw new InvalidArgumentError(`${what} must be a whole number from ${min} to ${max}`);
    return n;
  };
}

/**
 * An id argument/option (`what`: `job id`, `task id`, ...): a whole number 1..MAX_ID
 * (2,147,483,647, the largest id the store holds: protocol/ids.ts), checked before any request.
 */
export function parseIdArg(what: string): (text: string) => number {
  return intIn(1, MAX_ID, what);
}

/** A job id (1..2147483647). */
export const parseJobId = parseIdArg('job id');

/**
 * A job input given as JSON text: a JSON object, e.g. `'{"repo":"examples/calc"}'`. `what`
 * names where it came from in errors (default `INPUT_JSON`, the `run` argument; `--input`).
 * @throws CliError (exit 2) naming `what` and what is wrong.
 */
export function parseInputJson(text: string | undefined, what = 'INPUT_JSON'): Record<string, unknown> {
  if (text === undefined || text.trim() === '') return {};
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new CliError(`${what} is not valid JSON (${err instanceof Error ? err.message : String(err)}): ${text.slice(0, 100)}`, 2);
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new CliError(`${what} must be a JSON object, e.g. '{"repo":"examples/calc"}'`, 2);
  return v as Record<string, unknown>;
}

// --- shared options --------------------------------------------------------------------

/**
 * A boolean environment variable's value: `1`, `true`, `yes` → true; `0`, `false`, `no` → false
 * (any case, spaces around ignored); empty → undefined (as if unset).
 * @throws CliError (exit 2) naming the variable for anything else (`FLOTILLA_JSON=maybe`).
 */
export function parseBoolEnv(name: string, text: string): boolean | undefined {
  const v = text.trim().toLowerCase();
  if (v === '') return undefined;
  if (['1', 'true', 'yes'].includes(v)) return true;
  if (['0', 'false', 'no'].includes(v)) return false;
  throw new CliError(`${name} must be 1, 0, true, false, yes or no; got ${JSON.stringify(cutEcho(text))}`, 2);
}

/** Attribute names of {@link addClientOptions}' value options, left to the commands by {@link refuseEmptyValues}. */
const CLIENT_KEYS: ReadonlySet<string> = new Set(['server', 'token', 'data']);

/**
 * Refuses every value-taking option of `cmd` given blank — `--title ""`, or its `FLOTILLA_*`
 * variable set to nothing, as a script's unset variable expands — by {@link refuseEmpty}: a
 * blank value never means "unset", for any command (some commands listed theirs by hand, and
 * the others took `FLOTILLA_X=` as no value at all). Options whose parser already refused or
 * turned the text into something else are left to it. Run before every action (main.ts).
 * @throws CliError (exit 2) naming the first such option, its variable and where it came from.
 */
export function refuseEmptyValues(cmd: Command): void {
  const values = cmd.opts<Record<string, unknown>>();
  for (const o of cmd.options) {
    if (!o.required && !o.optional) continue; // a boolean flag: applyBooleanEnv
    const key = o.attributeName();
    // The client options: whether a command reads them depends on its path (`run --parent-token`
    // takes FLOTILLA_URL over FLOTILLA_SERVER and no --token), so each command refuses them
    // where it reads them (clientFrom, refuseEmptyOptions), naming both flag and variable.
    if (CLIENT_KEYS.has(key)) continue;
    const source = cmd.getOptionValueSource(key);
    if (source !== 'cli' && source !== 'env') continue;
    const v = values[key];
    const blank = typeof v === 'string' ? v.trim() === '' : Array.isArray(v) && v.some((x) => typeof x === 'string' && x.trim() === '');
    if (blank) refuseEmpty('', o.long ?? o.flags, o.envVar, source);
  }
}

/**
 * Reads the boolean options of `cmd` that came from their environment variable (commander
 * sets a flag when its variable is merely defined, whatever its value) by {@link parseBoolEnv}:
 * a false or empty value turns the flag back off (`--no-x` options back on).
 * Run before every action (main.ts preAction hook).
 * @throws CliError (exit 2) naming the variable when its value is not a boolean.
 */
export function applyBooleanEnv(cmd: Command): void {
  for (const o of cmd.options) {
    if (!o.envVar || o.required || o.optional) continue;
    const key = o.attributeName();
    if (cmd.getOptionValueSource(key) !== 'env') continue;
    if (parseBoolEnv(o.envVar, process.env[o.envVar] ?? '') === true) continue;
    cmd.setOptionValueWithSource(key, o.negate ? true : undefined, 'default');
  }
}

/** `--json` (env `FLOTILLA_JSON`: 1/0/true/false/yes/no, see {@link applyBooleanEnv}). */
export function jsonOption(): Option {
  return new Option('--json', 'print JSON for scripts').env('FLOTILLA_JSON');
}

/** `--data DIR` (env `FLOTILLA_DATA`, default ~/.flotilla). */
export function dataOption(what = 'data folder: store, admin token, runner work folder'): Option {
  return new Option('--data <dir>', what).env('FLOTILLA_DATA').default(defaultDataDir(), '~/.flotilla');
}

/** Adds `--server`, `--token`, `--data` and `--json` to a command that talks to a server. */
export function addClientOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option('--server <url>', `control plane URL (default ${DEFAULT_SERVER})`).env('FLOTILLA_SERVER'))
    .addOption(new Option('--token <token>', 'API token (default: <data>/admin-token)').env('FLOTILLA_TOKEN'))
    .addOption(dataOption('data folder where a local server keeps admin-token'))
    .addOption(jsonOption());
}

/** Options {@link addClientOptions} adds, as parsed. */
export interface ClientOptions {
  server?: string;
  token?: string;
  data: string;
  json?: boolean;
}

/**
 * True when `--json` was given, or FLOTILLA_JSON is 1/true/yes (main.ts has already refused
 * other values, exit 2, and turned 0/false/no off: {@link applyBooleanEnv}; checked here too
 * for commands run without that hook).
 */
export function wantsJson(cmd: Command, opts: { json?: boolean }): boolean {
  if (!opts.json) return false;
  if (cmd.getOptionValueSource('json') === 'env') return parseBoolEnv('FLOTILLA_JSON', process.env.FLOTILLA_JSON ?? '') === true;
  return true;
}

/** True for a URL whose host is this machine (127.0.0.0/8, ::1, localhost). */
export function isLoopbackUrl(url: string): boolean {
  try {
    const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
    return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
  } catch {
    return false;
  }
}

/**
 * The API token: `--token`, else `FLOTILLA_TOKEN`, else the contents of `<data>/admin-token`
 * — the last only when the server is on this machine (loopback), so the local admin token is
 * never sent to another host, and only to a server that proves it holds that token
 * ({@link serverHoldsToken}: a mistyped port reaching another local service got the admin token
 * in its Authorization header, a fresh tester's finding). A token or data folder given but empty
 * is refused ({@link refuseEmpty}).
 * @throws CliError saying where it looked, or that the server did not prove it holds the local
 *   token (exit 1, code `token_not_proven`); ApiError `network` when the server gives no answer
 *   (the token unsent); CliError exit 2 for an empty `--token`/FLOTILLA_TOKEN or `--data`/FLOTILLA_DATA.
 */
export async function resolveToken(opts: { token?: string; data: string }, serverUrl: string = DEFAULT_SERVER): Promise<string> {
  // Given but empty (`FLOTILLA_TOKEN=$UNSET_VAR`) never falls back to the local admin token.
  refuseEmpty(opts.token, '--token', 'FLOTILLA_TOKEN');
  if (opts.token !== undefined) return opts.token.trim();
  refuseEmpty(opts.data, '--data', 'FLOTILLA_DATA');
  const file = join(opts.data, 'admin-token');
  if (!isLoopbackUrl(serverUrl)) {
    throw new CliError(`no API token for ${serverUrl}: pass --token or set FLOTILLA_TOKEN (the local ${file} is only used for a server on this machine)`);
  }
  let t = '';
  try {
    t = (await readFile(file, 'utf8')).trim();
  } catch {
    // fall through
  }
  if (t) {
    const holds = await serverHoldsToken(serverUrl, t);
    if (holds === 'yes') return t;
    // as the client's own network error reads (and --json's code `network`), the token unsent
    if (holds !== 'no') throw new ApiError(0, 'network', `cannot reach the Flotilla server at ${serverUrl}: ${holds.unreachable} (the admin token in ${file} was not sent)`);
    throw new CliError(
      `the server at ${serverUrl} did not prove that it holds the admin token in ${file} (its GET /healthz gave no matching adminTokenProof), so the token was not sent: it is another service on that port, a Flotilla server of another data folder, or one whose admin token was revoked; check --server / FLOTILLA_SERVER and --data / FLOTILLA_DATA, or pass --token / FLOTILLA_TOKEN`,
      1,
      'token_not_proven',
    );
  }
  throw new CliError(
    `no API token: pass --token, set FLOTILLA_TOKEN, or run \`flotilla up\` on this machine (it writes ${file}; a server started with \`--data DIR\` writes DIR/admin-token, read it with --data DIR or FLOTILLA_DATA=DIR)`,
  );
}

/** How long the CLI waits for a local server's `GET /healthz` ({@link serverHoldsToken}), ms. */
const HOLDS_TOKEN_TIMEOUT_MS = 10_000;

/**
 * Whether the server at `serverUrl` proves that it holds `token` (a local data folder's admin
 * token) without the token being sent: its public `GET /healthz?adminTokenChallenge=<fresh
 * random hex>` answers JSON whose `adminTokenProof` is core/tokens.ts adminTokenProof(token,
 * that challenge) (a fixed value could be copied from the real server by any local process).
 * `{ unreachable }` (the cause) when it gives no answer within {@link HOLDS_TOKEN_TIMEOUT_MS};
 * `'no'` for any other answer (not JSON, no proof, another proof, a redirect).
 */
export async function serverHoldsToken(serverUrl: string, token: string): Promise<'yes' | 'no' | { unreachable: string }> {
  const challenge = randomBytes(32).toString('hex');
  let res: Response;
  try {
    res = await fetch(`${serverUrl.replace(/\/+$/, '')}/healthz?adminTokenChallenge=${challenge}`, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(HOLDS_TOKEN_TIMEOUT_MS), redirect: 'manual' });
  } catch (err) {
    const timedOut = err instanceof Error && err.name === 'TimeoutError';
    return { unreachable: timedOut ? `GET /healthz gave no answer within ${HOLDS_TOKEN_TIMEOUT_MS / 1000} s` : causeOf(err) };
  }
  let body: unknown;
  try {
    body = await res.json();
  } catch {
    return 'no';
  }
  const proof = body !== null && typeof body === 'object' ? (body as { adminTokenProof?: unknown }).adminTokenProof : undefined;
  return typeof proof === 'string' && proof === adminTokenProof(token, challenge) ? 'yes' : 'no';
}

/**
 * A client for `--server` (else FLOTILLA_SERVER, else http://127.0.0.1:8787) with the resolved
 * token ({@link resolveToken}).
 * @throws CliError (exit 2) for a server URL that is empty or not http(s).
 */
export async function clientFrom(opts: ClientOptions): Promise<FlotillaClient> {
  // Given but empty (`FLOTILLA_SERVER=`) is refused, not taken for the default server; so is an
  // empty --data / FLOTILLA_DATA, even when a token makes it unused (every client command alike).
  refuseEmpty(opts.server, '--server', 'FLOTILLA_SERVER');
  refuseEmpty(opts.data, '--data', 'FLOTILLA_DATA');
  const url = opts.server !== undefined ? opts.server.trim() : DEFAULT_SERVER;
  // Before the token: `FLOTILLA_SERVER=notaurl` was told "no API token for notaurl".
  if (!/^https?:\/\//i.test(url) || !URL.canParse(url)) throw new CliError(`--server: url "${cutEcho(url)}" must start with http:// or https:// (from --server or FLOTILLA_SERVER)`, 2);
  const token = await resolveToken(opts, url);
  try {
    return new FlotillaClient({ url, token });
  } catch (err) {
    const msg = err instanceof Error ? err.message.replace(/^FlotillaClient: /, '') : String(err);
    throw new CliError(msg.startsWith('token ') ? msg : `--server: ${msg}`, 2);
  }
}

/**
 * `--repo-base <dir>` (`FLOTILLA_REPO_BASE`) of a command that starts a runner: where the
 * relative repo paths of job inputs resolve, and the folder local repositories must be inside
 * (runner/workspace.ts); default: the folder the command was started in.
 */
export function repoBaseOption(): Option {
  return new Option('--repo-base <dir>', 'where relative repo paths of job inputs resolve; local repos must be inside it (default: current folder)').env('FLOTILLA_REPO_BASE');
}

/**
 * The folder `--repo-base` names, resolved against the current folder; undefined when not given.
 * @throws CliError (exit 2) naming the option when it is not a folder.
 */
export async function repoBaseDir(value: string | undefined): Promise<string | undefined> {
  if (value === undefined) return undefined;
  const dir = resolve(value);
  const st = await stat(dir).catch(() => null);
  if (!st?.isDirectory()) throw new CliError(`--repo-base (FLOTILLA_REPO_BASE): ${dir} is not a folder`, 2);
  return dir;
}
