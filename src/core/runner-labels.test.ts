import { describe, expect, it } from 'vitest';
import { bindLabels } from './runner-labels.js';

describe('bindLabels', () => {
  it("a runner's own label may add a key the token did not bind, whatever its name (constructor, toString)", () => {
    expect(bindLabels({ os: 'linux' }, { constructor: 'x', toString: 'y', os: 'linux' })).toEqual({ labels: { constructor: 'x', toString: 'y', os: 'linux' }, refused: [] });
  });
  it('a different value for a bound key is refused and the bound one kept', () => {
    expect(bindLabels({ os: 'linux' }, { os: 'mac', gpu: 'a100' })).toEqual({ labels: { os: 'linux', gpu: 'a100' }, refused: ['os'] });
  });
});
