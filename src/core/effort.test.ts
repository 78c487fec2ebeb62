import { describe, expect, it } from 'vitest';
import { resolveEffortTier } from './effort.js';

describe('effort tiers', () => {
  const account = { cheap: { model: 'claude-haiku-4-5', level: 'low' }, high: { model: 'claude-opus-4-1', level: 'xhigh' } };
  it('picks run > step > playbook > agent > account default', () => {
    expect(resolveEffortTier({ run: 'max', agent: 'medium', accountDefault: 'cheap' }, account)).toEqual({ tier: 'max', model: 'claude-opus-4-6', level: 'max' });
    expect(resolveEffortTier({ step: 'cheap', agent: 'medium' }, account)).toEqual({ tier: 'cheap', model: 'claude-haiku-4-5', level: 'low' });
    expect(resolveEffortTier({ playbook: 'medium', agent: 'max' })).toEqual({ tier: 'medium', model: 'claude-sonnet-4-5', level: 'medium' });
    expect(resolveEffortTier({ agent: 'medium', accountDefault: 'cheap' }, account)).toEqual({ tier: 'medium', model: 'claude-sonnet-4-5', level: 'medium' });
    expect(resolveEffortTier({ accountDefault: 'cheap' }, account)).toEqual({ tier: 'cheap', model: 'claude-haiku-4-5', level: 'low' });
    expect(resolveEffortTier({})).toBeNull();
  });
  it('an account tier redefines a built-in one; an unknown tier is an error naming its source', () => {
    expect(resolveEffortTier({ run: 'high' }, account)).toEqual({ tier: 'high', model: 'claude-opus-4-1', level: 'xhigh' });
    expect(() => resolveEffortTier({ agent: 'turbo' }, account)).toThrow('effort: unknown tier "turbo" (from the agent; known: cheap, high, max, medium)');
  });
  it('a tier named like an Object.prototype member is unknown, not a tier', () => {
    for (const name of ['toString', 'constructor', '__proto__', 'valueOf']) {
      expect(() => resolveEffortTier({ run: name }, account), name).toThrow(`effort: unknown tier ${JSON.stringify(name)} (from the run; known: cheap, high, max, medium)`);
    }
  });
});
