import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { describeIssues } from './errors.js';

const issuesOf = (schema: z.ZodType, text: string) => {
  const r = schema.safeParse(JSON.parse(text));
  if (r.success) throw new Error('expected a refusal');
  return r.error.issues;
};

describe('describeIssues', () => {
  it('says a JSON number too large to read is out of range, not "received Infinity"', () => {
    const schema = z.object({ addUsd: z.number() });
    expect(describeIssues(issuesOf(schema, '{"addUsd":1e400}'))).toBe('addUsd: number out of range (JSON numbers beyond ±1.8e308 cannot be read)');
    expect(describeIssues(issuesOf(schema, '{"addUsd":-1e999}'))).toBe('addUsd: number out of range (JSON numbers beyond ±1.8e308 cannot be read)');
  });

  it('leaves other type errors as zod words them', () => {
    const schema = z.object({ addUsd: z.number() });
    expect(describeIssues(issuesOf(schema, '{"addUsd":"Infinity"}'))).toBe('addUsd: Invalid input: expected number, received string');
  });

  it('says the union of types a field takes when every branch failed on its type', () => {
    const schema = z.object({ input: z.union([z.string(), z.array(z.string())]) });
    expect(describeIssues(issuesOf(schema, '{}'))).toBe('input: Invalid input: expected string or array, received undefined');
  });
});
