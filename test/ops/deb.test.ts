// The Debian package (tools/build-deb.sh, docs/packaging.md), built around a stand-in
// binary (the real one takes minutes; .ci/run packs and installs the real one): its files,
// conffile, maintainer scripts and unit, the default config agreeing with ivtd's defaults,
// and lintian finding no error (Debian's lintian; .ci/run installs it).
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveConfig } from '../../src/base/config.ts';
import pkg from '../../package.json' with { type: 'json' };

const ROOT = join(import.meta.dirname, '..', '..');
const have = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;

t.test('the default config is ivtd\'s own defaults', async (t) => {
  const file = JSON.parse(readFileSync(join(ROOT, 'ops', 'debian', 'ivtd.json'), 'utf8')) as Record<string, unknown>;
  const defaults = resolveConfig({}, {}) as unknown as Record<string, unknown>;
  for (const [k, v] of Object.entries(file)) t.equal(v, defaults[k], `${k}`);
  t.ok(!('dataDir' in file), 'no dataDir: the unit\'s StateDirectory (/var/lib/ivtd) decides');
});

t.test('tools/build-deb.sh packs the binary, the unit and the config', { skip: have('dpkg-deb') ? false : 'dpkg-deb is not installed' }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-deb-test-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const bin = join(dir, 'ivtd');
  writeFileSync(bin, `#!/bin/sh\necho "ivtd ${pkg.version}"\n`);
  chmodSync(bin, 0o755);
  const out = join(dir, 'out');
  const built = spawnSync(join(ROOT, 'tools', 'build-deb.sh'), [bin, out], { encoding: 'utf8' });
  t.equal(built.status, 0, built.stderr);
  const deb = join(out, `ivtd_${pkg.version}_amd64.deb`);
  t.same(readdirSync(out), [`ivtd_${pkg.version}_amd64.deb`]);

  const contents = spawnSync('dpkg-deb', ['--contents', deb], { encoding: 'utf8' }).stdout;
  for (const f of ['./usr/bin/ivtd', './lib/systemd/system/ivtd.service', './etc/ivtd/ivtd.json', './usr/share/doc/ivtd/copyright', './usr/share/doc/ivtd/changelog.gz', './usr/share/man/man1/ivtd.1.gz']) {
    t.match(contents, new RegExp(` ${f.replace(/\./g, '\\.')}\\n`), `holds ${f}`);
  }
  t.match(contents, /-rwxr-xr-x root\/root .* \.\/usr\/bin\/ivtd\n/, 'the binary: root-owned, executable');
  const field = (name: string) => spawnSync('dpkg-deb', ['--field', deb, name], { encoding: 'utf8' }).stdout.trim();
  t.equal(field('Package'), 'ivtd');
  t.equal(field('Version'), pkg.version);
  t.equal(field('Architecture'), 'amd64');
  t.match(field('Depends'), /adduser/);

  const x = join(dir, 'x');
  t.equal(spawnSync('dpkg-deb', ['--raw-extract', deb, x]).status, 0);
  t.equal(readFileSync(join(x, 'DEBIAN', 'conffiles'), 'utf8'), '/etc/ivtd/ivtd.json\n', 'the config is a conffile');
  const unit = readFileSync(join(x, 'lib', 'systemd', 'system', 'ivtd.service'), 'utf8');
  t.match(unit, /^ExecStart=\/usr\/bin\/ivtd serve --config \/etc\/ivtd\/ivtd\.json$/m);
  t.match(unit, /^User=ivtd$/m);
  t.match(unit, /^StateDirectory=ivtd$/m);
  t.match(unit, /^ProtectSystem=strict$/m, 'the hardened unit of ivtd systemd-unit');
  t.notMatch(unit, /sudo sh -c/, 'no install recipe for the unpackaged binary');
  const postinst = readFileSync(join(x, 'DEBIAN', 'postinst'), 'utf8');
  t.match(postinst, /adduser --system --group --home \/var\/lib\/ivtd/, 'postinst makes the system user');
  t.match(postinst, /install -d -o ivtd -g ivtd -m 0700 \/var\/lib\/ivtd/, 'and the data dir');
  for (const s of ['postinst', 'prerm', 'postrm']) t.equal(spawnSync('sh', ['-n', join(x, 'DEBIAN', s)]).status, 0, `${s} parses`);

  // Locally a missing lintian skips; in CI (which installs it) it fails.
  const skip = have('lintian') || process.env.CI ? false : 'lintian is not installed (Debian: apt-get install lintian)';
  await t.test('lintian finds no error', { skip }, async (t) => {
    const lint = spawnSync('lintian', ['--tag-display-limit', '0', deb], { encoding: 'utf8' });
    t.equal(lint.error, undefined, 'lintian ran');
    const errors = lint.stdout.split('\n').filter((l) => l.startsWith('E:'));
    t.same(errors, [], `no E: tags (warnings: ${lint.stdout.split('\n').filter((l) => l.startsWith('W:')).join('; ') || 'none'})`);
  });
});
