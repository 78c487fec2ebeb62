import { describe, expect, it } from 'vitest';
import { LabelValue } from './labels.js';
import { maskUrlPasswords, oneLine, oneLineText, urlPasswords } from './text.js';

describe('one-line text', () => {
  it('oneLine replaces each run of C0/C1 controls, DEL, U+2028 and U+2029 by one space and keeps the rest', () => {
    expect(oneLine('plain – ünïcode 🚀')).toBe('plain – ünïcode 🚀');
    expect(oneLine('a\r\n\tb\u007fc\u009bd\u2028\u2029e\u0000')).toBe('a b c d e ');
  });

  it('oneLineText trims, bounds the length and names the first bad character', () => {
    const t = oneLineText(5);
    expect(t.parse('  hi  ')).toBe('hi');
    expect(t.safeParse('123456').success).toBe(false);
    expect(t.safeParse('   ').success).toBe(false);
    expect(t.safeParse('a\u2029b').error?.issues[0]?.message).toBe('must be one line of printable text: found U+2029 (it is shown in listings)');
    expect(t.safeParse('a\tb').error?.issues[0]?.message).toBe('must be one line of printable text: found a tab (U+0009) (it is shown in listings)');
  });

  it('a label value may not hold a terminal escape or a line separator', () => {
    expect(LabelValue.safeParse('x86_64 / ünïcode').success).toBe(true);
    expect(LabelValue.safeParse('a\u001b[2Jb').success).toBe(false);
    expect(LabelValue.safeParse('a\u2028b').success).toBe(false);
  });
});

describe('maskUrlPasswords', () => {
  it('masks the password of URLs anywhere in a text, keeps the user name, host and path', () => {
    expect(maskUrlPasswords('https://user:secret@git.example.com/team/api.git')).toBe('https://user:***@git.example.com/team/api.git');
    expect(maskUrlPasswords('repo https://u:p@ss@host:8443/r.git: clone failed; tried https://a:b@c/d too')).toBe('repo https://u:***@host:8443/r.git: clone failed; tried https://a:***@c/d too');
    expect(maskUrlPasswords('{"repo":"ssh://git:hunter2@host/x.git","ref":"main"}')).toBe('{"repo":"ssh://git:***@host/x.git","ref":"main"}');
    expect(maskUrlPasswords('HTTPS://U:P@H/')).toBe('HTTPS://U:***@H/');
    expect(maskUrlPasswords('https://user:@host/r')).toBe('https://user:***@host/r');
  });

  it('masks a lone user of an http(s) URL (a token passed as the user), not of other schemes; leaves text without userinfo alone', () => {
    expect(maskUrlPasswords('https://ghp_abc123@github.com/o/r.git')).toBe('https://***@github.com/o/r.git');
    expect(maskUrlPasswords('ssh://git@host/x.git')).toBe('ssh://git@host/x.git');
    for (const s of ['git@github.com:o/r.git', 'https://host/a@b', 'mail me: a@b.c', 'examples/calc', 'https://user:***@host/r']) expect(maskUrlPasswords(s)).toBe(s);
  });

  it('masks a password given as a query parameter (node-postgres reads ?password= and ?sslpassword=; fresh-tester finding)', () => {
    expect(maskUrlPasswords('cannot open PostgreSQL at postgres://127.0.0.1:5433/x?password=Secret99: connect ECONNREFUSED')).toBe('cannot open PostgreSQL at postgres://127.0.0.1:5433/x?password=***: connect ECONNREFUSED');
    expect(maskUrlPasswords('postgres:///db?host=/run&Password=S3c&sslpassword=k3y&user=u')).toBe('postgres:///db?host=/run&Password=***&sslpassword=***&user=u');
    expect(urlPasswords('postgres://h/db?password=Secret99&user=postgres and https://a:b@c/d')).toEqual(['Secret99', 'b']);
  });
});
