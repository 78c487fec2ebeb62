import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../test-io.js';

// `flotilla run --local` failing fast (an agent the server does not know), through main():
// with --json its stderr is the one JSON error line the README promises, nothing before it
// (the plain-text model line used to come first); without --json the model line is on stdout
// and names flotilla.yaml's routes, with a warning on stderr for a provider not configured.

const savedEnv = { ...process.env };
const savedCwd = process.cwd();
let data: string;

beforeEach(async () => {
  data = await mkdtemp(join(tmpdir(), 'flotilla-local-json-'));
  for (const k of Object.keys(process.env)) if (k.startsWith('FLOTILLA_') || k === 'DATABASE_URL' || k.startsWith('ANTHROPIC_') || k.startsWith('OPENAI_')) delete process.env[k];
  process.env.FLOTILLA_LOG_LEVEL = 'warn';
  process.chdir(data); // no flotilla.yaml here unless a test writes FLOTILLA_CONFIG
});

afterEach(async () => {
  process.env = { ...savedEnv };
  process.chdir(savedCwd);
  await rm(data, { recursive: true, force: true });
});

/** The API's answer for an agent it does not know, as `flotilla` words it (main.ts describeError). */
const isUnknownAgent = (message: string) => /no-such-agent/.test(message);

describe('flotilla run --local --json, failing', () => {
  it('stderr is exactly one JSON error line; stdout empty', async () => {
    const r = await runCli(['run', '--local', 'no-such-agent', '{}', '--json', '--data', join(data, 'd')]);
    expect(r.code, r.err).toBe(1);
    expect(r.out).toBe('');
    const lines = r.err.split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toBe('');
    const e = JSON.parse(lines[0]!) as { error: { message: string; code: string } };
    expect(isUnknownAgent(e.error.message), e.error.message).toBe(true);
  }, 60_000);

  it('with flotilla.yaml routing claude-* to anthropic and no key: text mode says so first, --json still one line', async () => {
    const file = join(data, 'flotilla.yaml');
    await writeFile(file, 'gateway:\n  models:\n    claude-*: anthropic\n    "*": scripted\n');
    process.env.FLOTILLA_CONFIG = file;
    const text = await runCli(['run', '--local', 'no-such-agent', '{}', '--data', join(data, 'd')]);
    expect(text.code).toBe(1);
    expect(text.out.split('\n')[0]).toBe('flotilla: model routes: claude-* → anthropic (not configured: its calls will fail); * (any other model) → the offline scripted model');
    const errLines = text.err.split('\n');
    expect(errLines[0]).toBe(
      'flotilla: warning: model route claude-* maps models to provider anthropic, which is not configured on this server: set ANTHROPIC_API_KEY (several keys: comma-separated), or route those models to another provider (flotilla.yaml gateway.models, FLOTILLA_MODEL_PROVIDERS)',
    );
    expect(errLines[1]).toMatch(/^flotilla: .*no-such-agent/);
    const json = await runCli(['run', '--local', 'no-such-agent', '{}', '--json', '--data', join(data, 'd')]);
    expect(json.code).toBe(1);
    expect(json.err.split('\n')).toHaveLength(2);
    expect(() => JSON.parse(json.err)).not.toThrow();
  }, 60_000);
});
