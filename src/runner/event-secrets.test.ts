import { describe, expect, it } from 'vitest';
import type { EventBody } from '../protocol/index.js';
import { maskedSecret, SecretMask } from './event-secrets.js';

const JOB = 'flj_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcd';
const CRED = 'flc_ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210_-zyxw';
const REG = 'flr_registrationtokensecret1234';

describe('SecretMask (runner events)', () => {
  const m = new SecretMask([JOB, CRED, REG, undefined, '', 'short']);

  it('masks each secret as its prefix and ***', () => {
    expect(maskedSecret(JOB)).toBe('flj_***');
    expect(maskedSecret('nounderscoresecret')).toBe('***');
    expect(m.text(`FLOTILLA_JOB_TOKEN=${JOB}\nx ${CRED}${JOB} ${REG}.`)).toBe('FLOTILLA_JOB_TOKEN=flj_***\nx flc_***flj_*** flr_***.');
  });

  it('walks every string of an event, nested, and copies only what changed', () => {
    const clean: EventBody = { type: 'tool.call', data: { id: 't1', name: 'Bash', input: { command: 'ls', args: ['a', { b: 'c' }], n: 3, ok: true, none: null } } };
    expect(m.event(clean)).toBe(clean);
    const dirty: EventBody = {
      type: 'job.finished',
      data: { status: 'succeeded', result: { summary: `key ${JOB}`, branch: 'b', changedFiles: ['a', `${CRED}.txt`] } },
    };
    const out = m.event(dirty);
    expect(out).toEqual({ type: 'job.finished', data: { status: 'succeeded', result: { summary: 'key flj_***', branch: 'b', changedFiles: ['a', 'flc_***.txt'] } } });
    // the original is untouched
    expect((dirty.data as { result: { summary: string } }).result.summary).toBe(`key ${JOB}`);
    const call: EventBody = { type: 'tool.call', data: { id: 't2', name: 'Bash', input: { env: { [JOB]: [1, `a${JOB}`] } } } };
    expect(m.event(call)).toEqual({ type: 'tool.call', data: { id: 't2', name: 'Bash', input: { env: { 'flj_***': [1, 'aflj_***'] } } } });
  });

  it('short or missing secrets mask nothing', () => {
    const none = new SecretMask([undefined, 'short']);
    const e: EventBody = { type: 'log', data: { stream: 'stdout', line: 'short story' } };
    expect(none.event(e)).toBe(e);
    expect(m.text('a short story')).toBe('a short story');
  });
});
