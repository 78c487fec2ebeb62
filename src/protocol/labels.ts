import { z } from 'zod';

/**
 * Runner labels and job selectors: flat `key=value` string maps, e.g.
 * `{ os: "linux", toolchain: "python" }`. A job's selector matches a runner when every
 * selector pair is present, with the same value, among the runner's labels.
 * Keys: 1–63 chars of `[A-Za-z0-9._/-]`; values: up to 255 chars, no newlines.
 */
export const LabelKey = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._/-]{0,62}$/, 'label key must be 1-63 chars of [A-Za-z0-9._/-]');
export const LabelValue = z.string().max(255).regex(/^[^\n\r]*$/, 'label value must be one line');
export const Labels = z.record(LabelKey, LabelValue);
export type Labels = z.infer<typeof Labels>;

/**
 * Parses `k=v,k2=v2` (the CLI and `FLOTILLA_LABELS` form) into {@link Labels}.
 * @throws Error naming the malformed pair.
 */
export function parseLabelList(text: string): Labels {
  const out: Labels = {};
  for (const raw of text.split(',')) {
    const pair = raw.trim();
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`label "${pair}" must look like key=value`);
    const key = pair.slice(0, eq).trim();
    const value = pair.slice(eq + 1).trim();
    const k = LabelKey.safeParse(key);
    if (!k.success) throw new Error(`label key "${key}": ${k.error.issues[0]?.message}`);
    const v = LabelValue.safeParse(value);
    if (!v.success) throw new Error(`label value for "${key}": ${v.error.issues[0]?.message}`);
    out[key] = value;
  }
  return out;
}
