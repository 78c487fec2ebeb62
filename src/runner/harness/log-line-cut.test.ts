import { describe, expect, it } from 'vitest';
import type { Line } from '../lines.js';
import { ClaudeStreamParser, LOG_LINE_LIMIT_CHARS } from './claude-stream.js';
import { CodexJsonParser } from './codex-stream.js';
import { CommandEventParser } from './command-stream.js';

const line = (text: string): Line => ({ text, truncated: false, droppedBytes: 0, invalidUtf8: false });

/** A harness output line past 8 KiB becomes a `log` event that says how much of it was cut. */
describe('long output lines in log events', () => {
  const parsers = {
    'claude-code': () => new ClaudeStreamParser({ pid: 1 }),
    codex: () => new CodexJsonParser({ pid: 1 }),
    command: () => new CommandEventParser({ pid: 1, command: 'run' }),
  };
  for (const [name, make] of Object.entries(parsers)) {
    it(`${name}: a 20,000-byte stderr line keeps 8,192 characters and ends "… [11,808 bytes cut]"`, () => {
      expect(LOG_LINE_LIMIT_CHARS).toBe(8192);
      expect(make().stderr(line('e'.repeat(20_000)))).toEqual([{ type: 'log', data: { stream: 'stderr', line: `${'e'.repeat(8192)}… [11,808 bytes cut]` } }]);
    });
  }
});
