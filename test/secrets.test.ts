import t from 'tap';
import {
  DUMMY_PASSWORD_HASH,
  hashKey,
  SCRYPT,
  hashPassword,
  needsRehash,
  newKey,
  passwordProblem,
  verifyPassword,
  verifyPasswordOrDummy,
} from '../src/base/secrets.ts';

t.test('secrets: keys and password hashes', async (t) => {
  const p = newKey('prebid');
  const r = newKey('reporting');
  t.match(p, /^ivp_[A-Za-z0-9_-]{32}$/);
  t.match(r, /^ivr_[A-Za-z0-9_-]{32}$/);
  t.not(newKey('prebid'), p, 'keys are random');
  t.equal(hashKey('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad', 'sha256 hex');

  const h = await hashPassword('correct horse');
  t.match(h, /^scrypt\$16384\$8\$5\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/, 'OWASP: N=2^14, r=8, p=5 (the cost of N=2^17, p=1 in 16 MiB)');
  t.not(await hashPassword('correct horse'), h, 'salted');
  t.equal(await verifyPassword('correct horse', h), true);
  t.equal(await verifyPassword('correct horsE', h), false);
  t.equal(await verifyPassword('correct horse', 'garbage'), false, 'unreadable hash is a mismatch');
  t.equal(await verifyPassword('x', 'scrypt$99999999$8$1$AA==$AA=='), false, 'absurd parameters are refused');
  t.equal(await verifyPassword('anything', DUMMY_PASSWORD_HASH), false);
  t.equal(await verifyPasswordOrDummy('correct horse', h), true);
  t.equal(await verifyPasswordOrDummy('correct horse', undefined), false);
});

t.test('hashes of the old cost still verify and are marked for an upgrade; the dummy costs what a real one does', async (t) => {
  const old = await hashPassword('correct horse', { N: 16384, r: 8, p: 1 });
  t.match(old, /^scrypt\$16384\$8\$1\$/);
  t.equal(await verifyPassword('correct horse', old), true);
  t.equal(needsRehash(old), true);
  t.equal(needsRehash(await hashPassword('correct horse')), false);
  t.equal(needsRehash(await hashPassword('x', { N: 32768, r: 8, p: 3 })), false, 'a costlier hash stays');
  t.equal(needsRehash('garbage'), false, 'an unreadable hash cannot be upgraded');
  t.match(DUMMY_PASSWORD_HASH, new RegExp(`^scrypt\\$${SCRYPT.N}\\$${SCRYPT.r}\\$${SCRYPT.p}\\$`), 'same parameters as new hashes');
});

t.test('a new password: 8 to 1024 characters, no control character', async (t) => {
  t.equal(passwordProblem('correct horse'), undefined, 'spaces are fine');
  t.equal(passwordProblem('pässwörd ✓ 密码'), undefined, 'and any printable character');
  t.match(passwordProblem('short'), /at least 8/);
  t.match(passwordProblem('a'.repeat(1025)), /at most 1024/);
  for (const c of ['\t', '\n', '\r', '\u0000', '\u001b', '\u007f']) t.match(passwordProblem(`abcd${c}efgh`), /must not contain control characters/, JSON.stringify(c));
});

t.test('a new password is well-formed text: no lone surrogate, no U+FFFD (login refuses both)', async (t) => {
  t.match(passwordProblem('\ufffdpassword1'), /replacement character|not valid/);
  t.match(passwordProblem('bad\ud800password'), /not valid/);
  t.match(passwordProblem('password\udc00'), /not valid/);
});
