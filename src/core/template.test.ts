import { describe, it, expect } from 'vitest';
import { renderTemplate } from './template.js';

describe('renderTemplate', () => {
  it('fills paths, defaults and JSON', () => {
    const out = renderTemplate('repo={{input.repo}} cmd={{ input.cmd|npm test }} id={{job.id}} o={{input.o}} x={{nope}}', {
      input: { repo: 'examples/calc', o: { a: 1 } },
      job: { id: 7 },
    });
    expect(out).toBe('repo=examples/calc cmd=npm test  id=7 o={"a":1} x=');
  });
});
