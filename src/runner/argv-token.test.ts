import { describe, expect, it } from 'vitest';
import { withoutTokenArg } from './argv-token.js';

describe('withoutTokenArg', () => {
  it('drops --token VALUE and --token=VALUE, keeps everything else in order', () => {
    expect(withoutTokenArg(['/bin/flotilla.js', 'runner', '--server', 'http://s', '--token', 'flr_abc', '--name', 'r1'])).toEqual(['/bin/flotilla.js', 'runner', '--server', 'http://s', '--name', 'r1']);
    expect(withoutTokenArg(['runner', '--token=flr_abc', '--labels', 'a=b'])).toEqual(['runner', '--labels', 'a=b']);
    expect(withoutTokenArg(['runner', '--tokens', 'x'])).toEqual(['runner', '--tokens', 'x']);
    expect(withoutTokenArg(['runner', '--token'])).toEqual(['runner']);
  });
  it('leaves what follows `--` alone', () => {
    expect(withoutTokenArg(['runner', '--', '--token', 'x'])).toEqual(['runner', '--', '--token', 'x']);
  });
});
