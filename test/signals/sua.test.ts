// The structured user agent (OpenRTB 2.6 device.sua) against the UA string, through the
// real UA analysis (the codes sua.ts compares are the analysis's own).
import t from 'tap';
import { emptySua, suaConflict, suaPlatform, type SuaFacts } from '../../src/signals/sua.ts';
import { UaAnalyzer, emptyVerdict, type UaVerdict } from '../../src/signals/ua-analysis.ts';
import { normalizeUa } from '../../src/signals/ua-cache.ts';

const analyzer = new UaAnalyzer();
function verdict(ua: string): UaVerdict {
  return analyzer.examine(normalizeUa(ua), emptyVerdict()) as UaVerdict;
}
function sua(over: Partial<SuaFacts>): SuaFacts {
  return { ...emptySua(), ...over };
}

const WIN_CHROME = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';
const WIN_FIREFOX = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:125.0) Gecko/20100101 Firefox/125.0';
const MAC_SAFARI = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15';
const ANDROID_CHROME = 'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36';
const IPHONE_CHROME = 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/124.0.6367.88 Mobile/15E148 Safari/604.1';

t.test('client-hint platform brands map to the analysis OS codes', async (t) => {
  t.equal(suaPlatform('Windows'), 'windows');
  t.equal(suaPlatform('macOS'), 'macos');
  t.equal(suaPlatform('Android'), 'android');
  t.equal(suaPlatform('Chrome OS'), 'chromeos');
  t.equal(suaPlatform('Tizen'), '', 'unknown platforms are left out');
  for (const [ua, os] of [[WIN_CHROME, 'windows'], [MAC_SAFARI, 'macos'], [ANDROID_CHROME, 'android'], [IPHONE_CHROME, 'ios']] as const) {
    t.equal(verdict(ua).os, os, `the analysis says ${os} for its UA`);
  }
});

t.test('agreeing hints are no conflict', async (t) => {
  t.equal(suaConflict(sua({ platform: 'windows', mobile: 0, chromium: true, chromiumMajor: 124, source: 2 }), verdict(WIN_CHROME)), '');
  t.equal(suaConflict(sua({ platform: 'android', mobile: 1, chromium: true, chromiumMajor: 124, source: 2 }), verdict(ANDROID_CHROME)), '');
  t.equal(suaConflict(sua({ platform: 'macos', source: 3 }), verdict(MAC_SAFARI)), '', 'a parse of the UA that names no brand');
  t.equal(suaConflict(sua({ platform: 'ios', chromium: true, chromiumMajor: 99 }), verdict(IPHONE_CHROME)), '', 'iOS browsers are WebKit whatever they say');
  t.equal(suaConflict(sua({ platform: 'macos' }), verdict(IPHONE_CHROME)), '', 'an iPad in desktop mode says macOS');
  t.equal(suaConflict(sua({ platform: 'linux' }), verdict(ANDROID_CHROME)), '', 'Android in desktop mode says Linux');
  t.equal(suaConflict(emptySua(), verdict(WIN_FIREFOX)), '', 'empty hints contradict nothing');
});

t.test('contradicting hints name what differs', async (t) => {
  t.equal(suaConflict(sua({ platform: 'android' }), verdict(WIN_CHROME)), 'platform', 'Android hints on a Windows UA');
  t.equal(suaConflict(sua({ platform: 'windows', mobile: 1 }), verdict(WIN_CHROME)), 'mobile', "a phone's hints on a Windows desktop UA");
  t.equal(suaConflict(sua({ platform: 'windows', chromium: true, chromiumMajor: 125 }), verdict(WIN_FIREFOX)), 'browser', 'Chromium hints on Firefox');
  t.equal(suaConflict(sua({ platform: 'macos', source: 2 }), verdict(MAC_SAFARI)), 'browser', 'client hints (Safari sends none) on a Safari UA');
  t.equal(suaConflict(sua({ platform: 'windows', chromium: true, chromiumMajor: 120 }), verdict(WIN_CHROME)), 'version', 'Chromium 120 hints on a Chrome 124 UA');
});

t.test('the device a structured UA describes without a UA string', async (t) => {
  const { suaDevice } = await import('../../src/signals/sua.ts');
  const out = { os: '', device: '', browser: '', blinkMajor: NaN };
  suaDevice({ ...emptySua(), platform: 'android', mobile: 1, chromium: true, chromiumMajor: 124 }, out);
  t.same(out, { os: 'android', device: 'mobile', browser: 'chromium', blinkMajor: 124 });
  suaDevice({ ...emptySua(), platform: 'windows', mobile: 0 }, out);
  t.match(out, { os: 'windows', device: 'desktop', browser: 'unknown' });
  suaDevice({ ...emptySua(), platform: 'android', mobile: 0 }, out);
  t.equal(out.device, 'unknown', 'Android without mobile: a tablet, a TV or a box');
  suaDevice(emptySua(), out);
  t.match(out, { os: 'unknown', device: 'unknown' });
});
