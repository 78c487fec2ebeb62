// What the dashboard shows for an API error (web/src/format.ts errorText): the message and the
// field it is about, without naming the field twice when the message starts with it.
import { describe, expect, it } from 'vitest';
import { errorText } from '../../web/src/format.js';
import { ApiError } from '../../src/client/errors.js';

describe('errorText', () => {
  it('adds the field unless the message already starts with it', () => {
    expect(errorText(new ApiError(400, 'invalid_request', 'must be a positive amount', 'addUsd'))).toBe('must be a positive amount (addUsd)');
    expect(errorText(new ApiError(400, 'invalid_request', "addUsd: job tree 5's budget would be $100000.040000, over the cap", 'addUsd'))).toBe("addUsd: job tree 5's budget would be $100000.040000, over the cap");
    expect(errorText(new ApiError(409, 'job_ended', 'job 3 has ended'))).toBe('job 3 has ended');
    expect(errorText(new Error('network down'))).toBe('network down');
    expect(errorText('odd')).toBe('odd');
  });
});
