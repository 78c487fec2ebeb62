import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { parseLabelList, type Labels } from '../protocol/index.js';
import { FlotillaClient } from '../client/index.js';

/** Default control-plane URL when neither `--server` nor `FLOTILLA_SERVER` is given. */
export const DEFAULT_SERVER = 'http://127.0.0.1:8787';

/** Default data folder: `~/.flotilla` (`FLOTILLA_DATA` overrides, `--data` overrides both). */
export function defaultDataDir(): string {
  return join(homedir(), '.flotilla');
}

/** A user-facing CLI error: printed as `flotilla: <message>`, exit code 1 (2 when `usage`). */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

// --- argument parsers (commander argParser: throw InvalidArgumentError naming the problem) ---

/** `--budget`: a positive number of US dollars (e.g. `1`, `0.5`), at most 100,000. */
export function parseBudget(text: string): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('budget must be a positive number of US dollars, e.g. 1 or 0.5');
  if (n > 100_000) throw new InvalidArgumentError('budget must be at most 100000 dollars');
  return n;
}

/** `--labels k=v,k2=v2` → Labels. */
export function parseLabels(text: string): Labels {
  try {
    return parseLabelList(text);
  } catch (err) {
    throw new InvalidArgumentError(err instanceof Error ? err.message : String(err));
  }
}

/** An integer in [min, max] (for `--priority`, `--capacity`, `--port`, `--limit`). */
export function intIn(min: number, max: number, what: string): (text: string) => number {
  return (text: string) => {
    const n = Number(text);
    if (!/^-?\d+$/.test(text.trim()) || n < min || n > max) throw new InvalidArgumentError(`${what} must be a whole number from ${min} to ${max}`);
    return n;
  };
}

/** A positive job id. */
export const parseJobId = intIn(1, Number.MAX_SAFE_INTEGER, 'job id');

/**
 * INPUT_JSON: a JSON object, e.g. `'{"repo":"examples/calc"}'`.
 * @throws CliError (exit 2) naming INPUT_JSON and what is wrong.
 */
export function parseInputJson(text: string | undefined): Record<string, unknown> {
  if (text === undefined || text.trim() === '') return {};
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new CliError(`INPUT_JSON is not valid JSON (${err instanceof Error ? err.message : String(err)}): ${text.slice(0, 100)}`, 2);
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new CliError('INPUT_JSON must be a JSON object, e.g. \'{"repo":"examples/calc"}\'', 2);
  return v as Record<string, unknown>;
}

// --- shared options --------------------------------------------------------------------

/** `--json` (env `FLOTILLA_JSON`; `0`, `false`, `no` or empty there mean off). */
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

/** True when `--json` was given, or FLOTILLA_JSON is set to something other than 0/false/no/empty. */
export function wantsJson(cmd: Command, opts: { json?: boolean }): boolean {
  if (!opts.json) return false;
  if (cmd.getOptionValueSource('json') === 'env') {
    const v = (process.env.FLOTILLA_JSON ?? '').trim().toLowerCase();
    return !['', '0', 'false', 'no', 'off'].includes(v);
  }
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
 * never sent to another host.
 * @throws CliError saying where it looked.
 */
export async function resolveToken(opts: { token?: string; data: string }, serverUrl: string = DEFAULT_SERVER): Promise<string> {
  if (opts.token && opts.token.trim() !== '') return opts.token.trim();
  const file = join(opts.data, 'admin-token');
  if (!isLoopbackUrl(serverUrl)) {
    throw new CliError(`no API token for ${serverUrl}: pass --token or set FLOTILLA_TOKEN (the local ${file} is only used for a server on this machine)`);
  }
  try {
    const t = (await readFile(file, 'utf8')).trim();
    if (t) return t;
  } catch {
    // fall through
  }
  throw new CliError(
    `no API token: pass --token, set FLOTILLA_TOKEN, or run \`flotilla up\` on this machine (it writes ${file}; a server started with \`--data DIR\` writes DIR/admin-token, read it with --data DIR or FLOTILLA_DATA=DIR)`,
  );
}

/** A client for `--server` (else FLOTILLA_SERVER, else http://127.0.0.1:8787) with the resolved token. */
export async function clientFrom(opts: ClientOptions): Promise<FlotillaClient> {
  const url = opts.server && opts.server.trim() !== '' ? opts.server.trim() : DEFAULT_SERVER;
  const token = await resolveToken(opts, url);
  try {
    return new FlotillaClient({ url, token });
  } catch (err) {
    const msg = err instanceof Error ? err.message.replace(/^FlotillaClient: /, '') : String(err);
    throw new CliError(msg.startsWith('token ') ? msg : `--server: ${msg}`, 2);
  }
}
