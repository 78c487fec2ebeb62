import { jsonNumber, jsonString } from './json-text.js';

/**
 * Structured logging. One line per record: `<iso time> <level> <message> key=value ...`.
 * Never pass secrets (tokens, API keys) as fields; {@link redact} masks the known shapes.
 */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

/** Text every shape {@link redact} masks contains (case-insensitive: `Bearer` is). */
const MAY_HOLD_SECRET = /fl[a-z]_|sk-|bearer/i;

/** Masks bearer tokens, `sk-...` keys and Flotilla tokens (`flj_`, `flr_`, `fla_`, `flt_` prefixes) in a string. */
export function redact(text: string): string {
  // one scan for what all three need (most lines have none of them), not three replace passes
  if (!MAY_HOLD_SECRET.test(text)) return text;
  return text
    .replace(/\b(fl[a-z]_)[A-Za-z0-9_-]{8,}/g, '$1***')
    .replace(/\bsk-[A-Za-z0-9_-]{8,}/g, 'sk-***')
    .replace(/(Bearer\s+)[A-Za-z0-9._~+/=-]{8,}/gi, '$1***');
}

/** A logger writing lines to `write` (default: stderr) at or above `level`. */
export function createLogger(
  level: LogLevel = 'info',
  write: (line: string) => void = (l) => process.stderr.write(l),
  base: Record<string, unknown> = {},
): Logger {
  const emit = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[lvl] < ORDER[level]) return;
    // One string built in place (no merged object, no entries arrays): the gateway logs a line
    // per model call. A key in both `base` and `fields` appears once, at base's place, with
    // the field's value (as `{ ...base, ...fields }` would order it).
    let line = `${isoNow()} ${lvl} ${msg}`;
    for (const k in base) line += pair(k, fields !== undefined && Object.hasOwn(fields, k) ? fields[k] : base[k]);
    if (fields !== undefined) for (const k in fields) if (!Object.hasOwn(base, k)) line += pair(k, fields[k]);
    write(redact(line) + '\n');
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (f) => createLogger(level, write, { ...base, ...f }),
  };
}

/** ` key=value`: the value as JSON (undefined as null); numbers, booleans and strings without JSON.stringify (same text, json-text.ts). */
function pair(k: string, v: unknown): string {
  if (typeof v === 'number') return ` ${k}=${jsonNumber(v)}`;
  if (typeof v === 'boolean') return v ? ` ${k}=true` : ` ${k}=false`;
  if (typeof v === 'string') return ` ${k}=${jsonString(v)}`;
  return ` ${k}=${JSON.stringify(v ?? null)}`;
}

let isoMs = -1;
let isoText = '';
/** The time now as ISO 8601 text, reused within the same millisecond (a line per model call). */
function isoNow(): string {
  const ms = Date.now();
  if (ms !== isoMs) {
    isoMs = ms;
    isoText = new Date(ms).toISOString();
  }
  return isoText;
}

/** A logger that drops everything (tests, quiet CLI paths). */
export const silentLogger: Logger = createLogger('silent');
