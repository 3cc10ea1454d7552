import t from 'tap';
import {
  DUMMY_PASSWORD_HASH,
  hashKey,
  hashPassword,
  newKey,
  verifyPassword,
  verifyPasswordOrDummy,
} from '../../src/store/secrets.ts';

t.test('secrets: keys and password hashes', async (t) => {
  const p = newKey('prebid');
  const r = newKey('reporting');
  t.match(p, /^ivp_[A-Za-z0-9_-]{32}$/);
  t.match(r, /^ivr_[A-Za-z0-9_-]{32}$/);
  t.not(newKey('prebid'), p, 'keys are random');
  t.equal(hashKey('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad', 'sha256 hex');

  const h = await hashPassword('correct horse');
  t.match(h, /^scrypt\$16384\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
  t.not(await hashPassword('correct horse'), h, 'salted');
  t.equal(await verifyPassword('correct horse', h), true);
  t.equal(await verifyPassword('correct horsE', h), false);
  t.equal(await verifyPassword('correct horse', 'garbage'), false, 'unreadable hash is a mismatch');
  t.equal(await verifyPassword('x', 'scrypt$99999999$8$1$AA==$AA=='), false, 'absurd parameters are refused');
  t.equal(await verifyPassword('anything', DUMMY_PASSWORD_HASH), false);
  t.equal(await verifyPasswordOrDummy('correct horse', h), true);
  t.equal(await verifyPasswordOrDummy('correct horse', undefined), false);
});
