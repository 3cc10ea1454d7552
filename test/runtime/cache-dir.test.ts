// The private folder native addons are written to before dlopen.
import t from 'tap';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cacheDirCandidates, claimPrivateDir, materialize } from '../../src/runtime/cache-dir.ts';

const scratch = mkdtempSync(join(tmpdir(), 'ivtd-cache-'));
t.teardown(() => rmSync(scratch, { recursive: true, force: true }));

t.test('candidates: XDG cache, home cache, then tmp per uid', async (t) => {
  const c = cacheDirCandidates({ XDG_CACHE_HOME: '/x/cache' });
  t.equal(c[0], '/x/cache/ivtd');
  t.match(c[1], /\/\.cache\/ivtd$/);
  t.equal(c.at(-1), join(tmpdir(), `ivtd-${process.getuid?.()}`));
  t.notOk(cacheDirCandidates({ XDG_CACHE_HOME: 'relative' }).includes('relative/ivtd'), 'relative XDG_CACHE_HOME ignored');
});

t.test('claimPrivateDir creates or tightens our folder, refuses others', async (t) => {
  const fresh = join(scratch, 'fresh', 'ivtd');
  t.equal(claimPrivateDir(fresh), null);
  t.equal(statSync(fresh).mode & 0o777, 0o700);

  const open = join(scratch, 'open');
  mkdirSync(open, { mode: 0o755 });
  chmodSync(open, 0o755);
  t.equal(claimPrivateDir(open), null);
  t.equal(statSync(open).mode & 0o777, 0o700, 'our own folder is tightened to 0700');

  const file = join(scratch, 'file');
  writeFileSync(file, '');
  t.match(claimPrivateDir(file), /EEXIST|not a directory/, 'a file is refused');

  if (process.getuid?.() === 0) {
    const foreign = join(scratch, 'foreign');
    mkdirSync(foreign, { mode: 0o700 });
    chownSync(foreign, 65534, 65534);
    t.match(claimPrivateDir(foreign), /owned by uid 65534/);
  }
});

t.test('materialize writes once, rewrites a wrong file, leaves no temporaries', async (t) => {
  const base = join(scratch, 'base');
  claimPrivateDir(base);
  let reads = 0;
  const files = [
    { name: 'a.node', size: 3, bytes: () => (reads++, new Uint8Array([1, 2, 3])) },
    { name: 'liba.so', size: 2, bytes: () => (reads++, new Uint8Array([9, 9])) },
  ];
  const dir = materialize('a-0123', files, base);
  t.equal(dir, join(base, 'a-0123'));
  t.same([...readFileSync(join(dir, 'a.node'))], [1, 2, 3]);
  t.equal(reads, 2);
  const first = statSync(join(dir, 'a.node'));

  materialize('a-0123', files, base);
  t.equal(reads, 2, 'present with the right size: not rewritten');
  t.equal(statSync(join(dir, 'a.node')).ino, first.ino);

  writeFileSync(join(dir, 'liba.so'), 'truncated-or-other');
  materialize('a-0123', files, base);
  t.equal(reads, 3, 'wrong size: rewritten');
  t.same([...readFileSync(join(dir, 'liba.so'))], [9, 9]);
  t.same(readdirSync(dir).sort(), ['a.node', 'liba.so'], 'no temporary files left');
  t.notOk(existsSync(join(dir, 'a.node.tmp')));
});
