import { readFileSync } from 'node:fs';
import t from 'tap';
import { IfaList, ZERO_IFA, ifaMalformed, ifaTypeConflict, isZeroIfa } from '../../src/signals/ifa.ts';
import { UaAnalyzer } from '../../src/signals/ua-analysis.ts';

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

t.test('a device-ID type contradicts the device only when both are known', async (t) => {
  const os = (ua: string) => new UaAnalyzer().analyze(ua, Date.now()).os;
  const roku = os('Roku/DVP-12.5 (12.5.0.4178-AE)');
  const tizen = os('Mozilla/5.0 (SMART-TV; LINUX; Tizen 6.0) AppleWebKit/537.36 (KHTML, like Gecko) 76.0.3809.146/6.0 TV Safari/537.36');
  const iphone = os('Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1');
  const android = os('Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36');
  t.same([roku, tizen, iphone, android], ['roku', 'tizen', 'ios', 'android'], 'the analysis names these platforms');
  t.equal(ifaTypeConflict('rida', roku), false, 'rida on Roku');
  t.equal(ifaTypeConflict('rida', tizen), true, 'rida on Tizen');
  t.equal(ifaTypeConflict('tifa', tizen), false);
  t.equal(ifaTypeConflict('idfa', iphone), false);
  t.equal(ifaTypeConflict('idfa', android), true, 'idfa on Android');
  t.equal(ifaTypeConflict('aaid', android), false);
  t.equal(ifaTypeConflict('gaid', iphone), true, 'gaid on iOS');
  t.equal(ifaTypeConflict('afai', 'fireos'), false);
  t.equal(ifaTypeConflict('afai', 'android'), false, 'Fire OS tablets parse as Android');
  t.equal(ifaTypeConflict('lgudid', 'webos'), false);
  t.equal(ifaTypeConflict('lgudid', tizen), true);
  t.equal(ifaTypeConflict('msai', 'xbox'), false);
  t.equal(ifaTypeConflict('msai', roku), true);
  t.equal(ifaTypeConflict('vida', roku), true);
  t.equal(ifaTypeConflict('rida', 'unknown'), false, 'an unknown device contradicts nothing');
  t.equal(ifaTypeConflict('rida', 'other'), false);
  for (const type of ['ppid', 'sspid', 'sessionid', 'dpid', 'some-exchange-type', '']) t.equal(ifaTypeConflict(type, tizen), false, `${type || 'no type'}: never`);
});
