import { afterEach, describe, expect, it, vi } from 'vitest';
import { processIO, terminalSafe } from './io.js';

describe('terminalSafe / processIO stdout', () => {
  afterEach(() => vi.restoreAllMocks());

  it('shows control characters (ESC, BEL, CR, DEL, C1) as \\uXXXX; keeps newline, tab and other text', () => {
    // an issue title a forge user chose: clear screen, red, set the window title
    expect(terminalSafe('\u001b[2J\u001b[31mPWNED\u001b]0;evil\u0007')).toBe('\\u001b[2J\\u001b[31mPWNED\\u001b]0;evil\\u0007');
    expect(terminalSafe('a\rb\u007fc\u009bd')).toBe('a\\u000db\\u007fc\\u009bd');
    expect(terminalSafe('line 1\n\tline 2 — é ✓')).toBe('line 1\n\tline 2 — é ✓');
  });

  it('the process stdout writes the safe text; isTTY passes through', () => {
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    const io = processIO();
    io.stdout.write('task 6 \u001b[2Jtitle\n');
    expect(spy).toHaveBeenCalledWith('task 6 \\u001b[2Jtitle\n');
    expect(io.stdout.isTTY).toBe(process.stdout.isTTY);
  });
});
