// The pure parts of the OpenRTB lookup: the schain object form under the string form's
// rules, sua against the UA, country and page-host mapping (nbr and reason classes:
// test/signals/category.test.ts).
import t from 'tap';
import { parseSchain, schainFromObject } from '../../src/signals/schain.ts';
import { emptySua, suaConflict } from '../../src/signals/sua.ts';
import { countryAlpha2, pageHost } from '../../src/prebid/ortb.ts';

t.test('schain object form follows the string form', async (t) => {
  const node = { asi: 'exchange1.example', sid: '1234', hp: 1, rid: 'r', name: 'n', domain: 'd.example' };
  const o = schainFromObject({ ver: '1.0', complete: 1, nodes: [node] });
  t.same(o, parseSchain('1.0,1!exchange1.example,1234,1,r,n,d.example'), 'same chain as its string');
  t.match(schainFromObject({ ver: '1', complete: 1, nodes: [node] }), { ok: false, error: 'bad_version' });
  t.match(schainFromObject({ ver: '1.0', complete: '1', nodes: [node] }), { ok: false, error: 'bad_complete' });
  t.match(schainFromObject({ ver: '1.0', complete: 1, nodes: [] }), { ok: false, error: 'no_nodes' });
  t.match(schainFromObject({ ver: '1.0', complete: 1, nodes: [{ ...node, asi: ' ' }] }), { ok: false, error: 'empty_asi' });
  t.match(schainFromObject({ ver: '1.0', complete: 1, nodes: [{ ...node, hp: 2 }] }), { ok: false, error: 'bad_hp' });
  t.match(schainFromObject('1.0,1!a,b,1'), { ok: false, error: 'bad_header' }, 'a string where the object belongs');
  t.match(schainFromObject({ ver: '1.0', complete: 0, nodes: [{ ...node, rid: 5 }] }), { ok: true, chain: { complete: 0, nodes: [{ rid: '' }] } }, 'optional field of another type dropped');
});

t.test('sua against the UA', async (t) => {
  const win = { os: 'windows', browser: 'chrome', device: 'desktop', blinkMajor: 124, browserMajor: 124 } as const;
  const sua = (o: Partial<ReturnType<typeof emptySua>>) => ({ ...emptySua(), ...o });
  t.equal(suaConflict(sua({ platform: 'windows', chromium: true, chromiumMajor: 124, source: 2 }), win), '', 'agreeing hints');
  t.equal(suaConflict(sua({}), win), '', 'empty sua says nothing');
  t.equal(suaConflict(sua({ platform: 'macos' }), win), 'platform');
  t.equal(suaConflict(sua({ mobile: 1 }), win), 'mobile');
  t.equal(suaConflict(sua({ chromium: true, chromiumMajor: 120 }), win), 'version');
  t.equal(suaConflict(sua({ chromium: true }), { os: 'windows', browser: 'firefox', device: 'desktop', blinkMajor: NaN, browserMajor: 125 }), 'browser');
  t.equal(suaConflict(sua({ platform: 'macos' }), { os: 'ios', browser: 'safari', device: 'tablet', blinkMajor: NaN, browserMajor: 17 }), '', 'iPad in desktop mode');
});

t.test('country and page host', async (t) => {
  t.equal(countryAlpha2('USA'), 'US');
  t.equal(countryAlpha2('gbr'), 'GB');
  t.equal(countryAlpha2('DE'), 'DE', 'alpha-2 taken as is');
  t.equal(countryAlpha2('XYZ'), null);
  t.equal(countryAlpha2('U'), null);
  t.equal(countryAlpha2('ZZ'), null, 'two letters that are no country');
  t.equal(countryAlpha2('XKX'), 'XK', 'Kosovo, user-assigned');
  t.equal(pageHost('https://www.Blog.example:443/p?q#f'), 'www.blog.example');
  t.equal(pageHost('//cdn.example/x'), 'cdn.example');
  t.equal(pageHost('https://u:p@h.example'), 'h.example');
  t.equal(pageHost('not a url'), '');
});
