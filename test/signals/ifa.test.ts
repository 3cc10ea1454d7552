import { readFileSync } from 'node:fs';
import t from 'tap';
import { IfaList, ZERO_IFA, ifaMalformed, isZeroIfa } from '../../src/signals/ifa.ts';

t.test('parses IFAs, comments and blank lines, case-insensitively', async (t) => {
  const list = IfaList.parse(
    [
      '# header comment',
      '',
      '11111111-1111-1111-1111-111111111111',
      '  FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF   # uppercase, inline comment',
      '\t12345678-1234-1234-1234-123456789012\r',
      '11111111-1111-1111-1111-111111111111 # duplicate is harmless',
    ].join('\n'),
    'test.txt',
  );
  t.equal(list.size, 3);
  t.ok(list.has('11111111-1111-1111-1111-111111111111'));
  t.ok(list.has('ffffffff-ffff-ffff-ffff-ffffffffffff'), 'stored lowercase');
  t.ok(list.has('FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF'), 'looked up case-insensitively');
  t.ok(list.has('12345678-1234-1234-1234-123456789012'), 'CRLF line endings');
  t.notOk(list.has('ab0c5e29-1d2b-4f7a-9e33-0a1b2c3d4e5f'));
  t.notOk(list.has(''));
  t.notOk(list.has('11111111-1111-1111-1111-111111111111x'));
});

t.test('reports every bad line with file and line number', async (t) => {
  const text = ['# ok', 'not-an-ifa', '11111111-1111-1111-1111-111111111111', '1111111-1111-1111-1111-111111111111', '00000000-0000-0000-0000-000000000000'].join('\n');
  let message = '';
  try {
    IfaList.parse(text, 'data/custom.txt');
  } catch (e) {
    message = (e as Error).message;
  }
  t.match(message, 'data/custom.txt:2: "not-an-ifa" is not an IFA');
  t.match(message, 'data/custom.txt:4: "1111111-1111-1111-1111-111111111111" is not an IFA');
  t.match(message, 'data/custom.txt:5: the all-zero IFA means limited ad tracking');
  t.notMatch(message, 'data/custom.txt:3', 'good lines are not reported');
});

t.test('long error lists are summarised', async (t) => {
  const text = Array.from({ length: 25 }, (_, k) => `bad-${k}`).join('\n');
  t.throws(() => IfaList.parse(text, 'x.txt'), /x\.txt:20:[^\n]*\n\(and 5 more\)$/);
});

t.test('the shipped list parses and leaves limited-ad-tracking users alone', async (t) => {
  const file = new URL('../../data/bad-ifas.txt', import.meta.url);
  const text = readFileSync(file, 'utf8');
  const list = IfaList.parse(text, 'data/bad-ifas.txt');
  t.ok(list.size >= 20, `${list.size} entries`);
  t.ok(list.has('11111111-1111-1111-1111-111111111111'));
  t.ok(list.has('ffffffff-ffff-ffff-ffff-ffffffffffff'));
  t.ok(list.has('12345678-1234-1234-1234-123456789012'));
  t.notOk(list.has('00000000-0000-0000-0000-000000000000'));
  for (const line of text.split('\n')) {
    if (/^[0-9a-f-]{36}/i.test(line)) t.match(line, /#\s*\S/, `explains why: ${line.slice(0, 36)}`);
  }
});

t.test('ifaMalformed and isZeroIfa', async (t) => {
  t.equal(ifaMalformed('6d92078a-8246-4ba4-ae5b-76104861e7dc'), '', 'AAID (lowercase)');
  t.equal(ifaMalformed('EA7583CD-A667-48BC-B806-42ECB2B48606'), '', 'IDFA (uppercase)');
  t.equal(ifaMalformed(ZERO_IFA), '', 'all-zero LAT IFA is well-formed');
  t.equal(isZeroIfa(ZERO_IFA), true);
  t.equal(isZeroIfa('6d92078a-8246-4ba4-ae5b-76104861e7dc'), false);
  t.equal(ifaMalformed(''), 'empty');
  t.equal(ifaMalformed('{IFA}'), 'macro');
  t.equal(ifaMalformed('${DEVICE_IFA}'), 'macro');
  t.equal(ifaMalformed('[IFA]'), 'macro');
  t.equal(ifaMalformed('__IFA__'), 'macro');
  t.equal(ifaMalformed('6d92078a82464ba4ae5b76104861e7dc'), 'length', 'hex without dashes');
  t.equal(ifaMalformed('6d92078a-8246-4ba4-ae5b-76104861e7dcff'), 'length');
  t.equal(ifaMalformed('6d92078a-8246-4ba4-ae5b-76104861e7dz'), 'not_uuid', 'non-hex digit');
  t.equal(ifaMalformed('6d92078a8-246-4ba4-ae5b-76104861e7dc'), 'not_uuid', 'dash misplaced');
  t.equal(ifaMalformed('ffffffff-ffff-ffff-ffff-ffffffffffff'), 'repeated');
  t.equal(ifaMalformed('11111111-1111-1111-1111-111111111111'), 'repeated');
});
