import { z } from 'zod';
import { cutEcho } from './echo.js';
import { LINE_BREAKING } from './text.js';

/**
 * Runner labels and job selectors: flat `key=value` string maps, e.g.
 * `{ os: "linux", toolchain: "python" }`. A job's selector matches a runner when every
 * selector pair is present, with the same value, among the runner's labels.
 * Keys: 1–63 chars of `[A-Za-z0-9._/-]`; values: up to 255 chars of one line of printable
 * text (no control character, U+2028 or U+2029: text.ts LINE_BREAKING; they are shown in listings).
 * Values are text, not identifiers: spaces are allowed (labels already stored may hold them), so
 * a command line the CLI prints with labels quotes them (protocol/shell-quote.ts; the dashboard's too).
 */
export const LabelKey = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._/-]{0,62}$/, 'label key must be 1-63 chars of [A-Za-z0-9._/-]');
export const LabelValue = z
  .string()
  .max(255)
  .refine((v) => !LINE_BREAKING.test(v), 'label value must be one line of printable text (no control characters)');
export const Labels = z.record(LabelKey, LabelValue);
export type Labels = z.infer<typeof Labels>;

/**
 * Parses `k=v,k2=v2` (the CLI and `FLOTILLA_LABELS` form) into {@link Labels}.
 * @throws Error naming the malformed pair, or a key given twice (`zone=mars,zone=venus`:
 *   which one was meant cannot be told, so neither is kept silently); a pair, key or value it
 *   repeats is cut to 100 characters (echo.ts cutEcho).
 */
export function parseLabelList(text: string): Labels {
  const out: Labels = {};
  for (const raw of text.split(',')) {
    const pair = raw.trim();
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`label "${cutEcho(pair)}" must look like key=value`);
    const key = pair.slice(0, eq).trim();
    const value = pair.slice(eq + 1).trim();
    const k = LabelKey.safeParse(key);
    if (!k.success) throw new Error(`label key "${cutEcho(key)}": ${k.error.issues[0]?.message}`);
    const v = LabelValue.safeParse(value);
    if (!v.success) throw new Error(`label value for "${key}": ${v.error.issues[0]?.message}`);
    if (Object.hasOwn(out, key)) throw new Error(`label key "${key}" is given twice (${key}=${cutEcho(out[key]!)}, ${key}=${cutEcho(value)}): give each key once`);
    out[key] = value;
  }
  return out;
}

/**
 * The conflict between a role given on its own (`--role`, a request's `role`) and a `role`
 * label among `labels` with another value, in words naming both (`role "build" conflicts with
 * label role=gpu`); null when there is none (no role, no role label, or the same value).
 * The role cannot win silently over the label (nor the label over it): refuse both.
 */
export function roleLabelConflict(role: string | undefined, labels: Labels | undefined): string | null {
  const labelled = labels?.role;
  if (role === undefined || labelled === undefined || labelled === role) return null;
  return `role "${role}" conflicts with label role=${labelled}: give the role once`;
}

/**
 * A role (`runner --role`, the label `role=`, `run --role`, an agent's `role:`): 1–63 chars of
 * `[A-Za-z0-9._-]`, first a letter or digit — the form of a runner name. One rule for runners,
 * runs and agents: a runner with role `Build` is reachable with `--role Build` (label values
 * match case-sensitively).
 */
export const RoleName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/, 'a role must be 1-63 characters of A-Z, a-z, 0-9, ".", "_", "-", starting with a letter or digit');
