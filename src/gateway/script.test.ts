import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { fillPlaceholders, loadModelScript } from './script.js';

describe('model scripts', () => {
  it('loads the shipped test-fixer script: Bash, Read, Edit, Bash, Bash, then the summary', () => {
    const s = loadModelScript(fileURLToPath(new URL('../../agents/test-fixer/script.yaml', import.meta.url)));
    const tools = s.turns.map((t) => t.content.flatMap((b) => ('tool_use' in b ? [b.tool_use.name] : [])).join(','));
    expect(tools).toEqual(['Bash', 'Read', 'Edit', 'Bash', 'Bash', '']);
    expect(s.model).toBe('claude-sonnet-4-5');
  });

  it('defaults cache figures to 0 and tool input to {}', () => {
    const dir = mkdtempSync(join(tmpdir(), 'script-'));
    const f = join(dir, 's.yaml');
    writeFileSync(f, 'turns:\n  - usage: { input_tokens: 1, output_tokens: 2 }\n    content:\n      - tool_use: { name: Bash }\n');
    const s = loadModelScript(f);
    expect(s.turns[0]).toEqual({
      usage: { input_tokens: 1, output_tokens: 2, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
      content: [{ tool_use: { name: 'Bash', input: {} } }],
    });
  });

  it('names the file and field of a bad script', () => {
    const dir = mkdtempSync(join(tmpdir(), 'script-'));
    const f = join(dir, 'bad.yaml');
    writeFileSync(f, 'turns:\n  - usage: { input_tokens: -1, output_tokens: 2 }\n    content: [{ text: hi }]\n');
    expect(() => loadModelScript(f)).toThrow(/bad\.yaml: field turns\.0\.usage\.input_tokens/);
    writeFileSync(f, 'turns: [\n');
    expect(() => loadModelScript(f)).toThrow(/bad\.yaml/);
    expect(() => loadModelScript(join(dir, 'missing.yaml'))).toThrow(/missing\.yaml/);
  });

  it('fills placeholders deeply', () => {
    const ctx = { job: { id: 7, branch: 'flotilla/job-7' }, input: { seconds: 5 }, workspace: '/w' };
    expect(fillPlaceholders({ a: ['{{job.id}} on {{job.branch}}', { p: '{{workspace}}/src/x.js', n: 3, s: 'sleep {{input.seconds|3}} {{input.missing|9}}' }] }, ctx)).toEqual({
      a: ['7 on flotilla/job-7', { p: '/w/src/x.js', n: 3, s: 'sleep 5 9' }],
    });
  });
});
