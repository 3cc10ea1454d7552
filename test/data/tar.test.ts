import t from 'tap';
import zlib from 'node:zlib';
import { extractFromTar, gunzipLimited } from '../../src/data/tar.ts';
import { makeTar } from '../helpers/tar.ts';

t.test('finds the first matching file: plain, prefixed, GNU long name, pax path', async (t) => {
  const plain = makeTar([
    { name: 'GeoLite2-ASN_20240101/', data: '', type: '5' },
    { name: 'GeoLite2-ASN_20240101/LICENSE.txt', data: 'licence' },
    { name: 'GeoLite2-ASN_20240101/GeoLite2-ASN.mmdb', data: 'MMDB BYTES' },
  ]);
  t.same(extractFromTar(plain, '.mmdb'), { path: 'GeoLite2-ASN_20240101/GeoLite2-ASN.mmdb', data: Buffer.from('MMDB BYTES') });
  const prefixed = makeTar([{ name: 'db.mmdb', prefix: 'some/dir', data: 'P' }]);
  t.equal(extractFromTar(prefixed, '.mmdb').path, 'some/dir/db.mmdb');
  const long = `${'d'.repeat(120)}/x.mmdb`;
  const gnu = makeTar([{ name: '././@LongLink', type: 'L', data: `${long}\0` }, { name: long.slice(0, 100), data: 'G' }]);
  t.same(extractFromTar(gnu, '.mmdb'), { path: long, data: Buffer.from('G') });
  const record = `path=${long}\n`;
  const len = record.length + 3 + String(record.length + 3).length - 2;
  const pax = makeTar([{ name: 'PaxHeader', type: 'x', data: `${len} ${record}` }, { name: 'short-name', data: 'X' }]);
  t.equal(extractFromTar(pax, '.mmdb').path, long);
});

t.test('refuses what is not a usable archive', async (t) => {
  const good = makeTar([{ name: 'a/b.mmdb', data: Buffer.alloc(2000, 1) }]);
  t.throws(() => extractFromTar(makeTar([{ name: 'a/README', data: 'x' }]), '.mmdb'), /no \*\.mmdb file/);
  t.throws(() => extractFromTar(good.subarray(0, 1000), '.mmdb'), /runs past the end/, 'truncated');
  const bad = Buffer.from(good);
  bad[10] = 0x41;
  t.throws(() => extractFromTar(bad, '.mmdb'), /bad checksum/);
  t.throws(() => extractFromTar(Buffer.from('<html>not a tar</html>'.padEnd(600, ' ')), '.mmdb'), { name: 'TarError' });
  t.throws(() => gunzipLimited(Buffer.from('not gzip'), 1000), /not a gzip file/);
  t.throws(() => gunzipLimited(zlib.gzipSync(Buffer.alloc(5000)), 1000), /over 1000 bytes/);
  t.equal(gunzipLimited(zlib.gzipSync('ok'), 1000).toString(), 'ok');
});
