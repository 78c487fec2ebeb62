import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { hashToken, newToken } from './tokens.js';

describe('newToken', () => {
  it('gives 256-bit tokens, each once, across pool refills', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const t = newToken('flj');
      expect(t).toMatch(/^flj_[A-Za-z0-9_-]{43}$/);
      expect(Buffer.from(t.slice(4), 'base64url')).toHaveLength(32);
      seen.add(t.slice(4));
    }
    expect(seen.size).toBe(1000);
  });
  it('hashes with SHA-256, lowercase hex', () => {
    expect(hashToken('flj_x')).toBe(createHash('sha256').update('flj_x').digest('hex'));
    expect(hashToken('flj_x')).toMatch(/^[0-9a-f]{64}$/);
  });
});
