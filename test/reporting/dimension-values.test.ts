// Reporting's dimension values as lookups give them (src/prebid/dimensions.ts): whatever a
// request's values hold, a tuple keeps its 19 values, each in its own column. The values
// travel joined by U+001F (tuple.ts: announcements, the tuple archive, the impression
// dictionary, the fleet's keys), so that character never stays in a value: a percent-encoded
// %1F in a GET parameter, or "\u001f" in a bid request's JSON, once shifted every later
// value of the row by one column and merged distinct tuples in the fleet's batches.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { TUPLE_DIMENSIONS } from '../../src/base/enums.ts';
import { loadBundle } from '../../src/data/bundle.ts';
import { buildLookupData } from '../../src/prebid/lookup-data.ts';
import { planMemory } from '../../src/memory/budget.ts';
import { allocateLookupMemory } from '../../src/prebid/lookup-memory.ts';
import { LookupEngine } from '../../src/prebid/pipeline.ts';
import { bidRequestOf } from '../../src/prebid/ortb/body.ts';
import { TupleDictionary } from '../../src/counts/tuple-dictionary.ts';
import { DIM_INDEX, clipDim, joinDims, splitDims, tupleKey } from '../../src/counts/tuple.ts';

const PARTNER = '6f1c2f9e-8a4b-4c7d-9e2f-1a2b3c4d5e6f';
const CHROME = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';

function engine(t: Test): LookupEngine {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-dims-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const data = buildLookupData(loadBundle({ dataDir: dir, mmdbCountry: undefined, mmdbAsn: undefined, mmdbAnonymousIp: undefined }), 1).data;
  const e = new LookupEngine(data, allocateLookupMemory(planMemory(64, 1)));
  e.keys.replace([{ customer_id: 'c1', partner_id: PARTNER, key_hash: createHash('sha256').update('key-1').digest('hex'), expires_at_ms: null }]);
  return e;
}

/** The rows the engine's lookups counted, as the main thread drains them. */
function drained(e: LookupEngine): Array<{ dims: string[]; total: number }> {
  const dict = new TupleDictionary();
  dict.add(e.counts.take().announced);
  return dict.drain(e.counts.shared, Date.now()).map((r) => ({ dims: [...r.dims], total: r.total }));
}

t.test('a value holding the separator keeps every value in its own column', async (t) => {
  const e = engine(t);
  const base = `p=${PARTNER}&k=key-1&ip=73.162.10.50&ua=${encodeURIComponent(CHROME)}&uid=u-1&adt=1&dvt=2&node=bidder-1`;
  const out = e.lookup(`${base}&pub=pub%1F1&sid=exchange.example&dmn=news.example&p1=a%1Fb%1F&p5=last`, Date.now());
  t.equal(out.status, 200, out.body);
  const rows = drained(e);
  t.equal(rows.length, 1);
  const dims = rows[0]!.dims;
  t.equal(dims.length, TUPLE_DIMENSIONS.length, 'as many values as dimensions');
  t.equal(dims[DIM_INDEX.pub], 'pub\ufffd1', 'the separator became U+FFFD');
  t.equal(dims[DIM_INDEX.p1], 'a\ufffdb\ufffd');
  t.equal(dims[DIM_INDEX.sid], 'exchange.example', 'the values after it are where they belong');
  t.equal(dims[DIM_INDEX.dmn], 'news.example');
  t.equal(dims[DIM_INDEX.node], 'bidder-1');
  t.equal(dims[DIM_INDEX.p5], 'last');
  t.equal(dims[DIM_INDEX.browser], 'chrome');
  t.equal(dims[DIM_INDEX.category], 'none', 'the last value too');
});

t.test('the same from a bid request: JSON can spell the separator', async (t) => {
  const e = engine(t);
  const bid = {
    id: 'r1',
    imp: [{ id: '1', banner: { w: 300, h: 250 } }],
    site: { domain: 'news.example', publisher: { id: 'pub\u001f2' } },
    device: { ua: CHROME, ip: '73.162.10.51', devicetype: 2 },
    user: { id: 'u-2' },
  };
  const out = e.lookupOrtb(`p=${PARTNER}&k=key-1&node=bidder-1`, bidRequestOf(bid), Date.now());
  t.equal(out.status, 200, out.body);
  const dims = drained(e)[0]!.dims;
  t.equal(dims.length, TUPLE_DIMENSIONS.length);
  t.equal(dims[DIM_INDEX.pub], 'pub\ufffd2');
  t.equal(dims[DIM_INDEX.dmn], 'news.example');
  t.equal(dims[DIM_INDEX.node], 'bidder-1');
});

t.test('a lookup keeps none of the values of the lookup before it', async (t) => {
  // The query scanner clears only the slots its last scan filled, and every slot after a bid
  // request's fields were written into them: neither a GET's nor a bid request's values may
  // reach the next GET lookup of the thread.
  const e = engine(t);
  const base = `p=${PARTNER}&k=key-1&ip=73.162.10.50&ua=${encodeURIComponent(CHROME)}&uid=u-1&adt=1&dvt=2&node=bidder-1&sid=exchange.example`;
  let n = 0;
  // (A new pub each time: a new tuple, announced, so drained() sees it.)
  const expectPlain = (label: string) => {
    const pub = `pub-plain-${++n}`;
    const out = e.lookup(`${base}&pub=${pub}`, Date.now());
    t.equal(out.status, 200, out.body);
    const dims = drained(e).find((r) => r.dims[DIM_INDEX.pub] === pub)!.dims;
    for (const d of ['app', 'dmn', 'cmp', 'adv', 'p1', 'p2', 'p3', 'p4', 'p5'] as const) t.equal(dims[DIM_INDEX[d]], '', `${label}: ${d} is empty`);
    t.equal(dims[DIM_INDEX.env], 'site', `${label}: a site's lookup`);
  };
  expectPlain('first');
  const full = e.lookup(`${base}&pub=pub-full&app=com.example.app&ifa=6d92078a-8246-4ba4-ae5b-76104861e7dc&dmn=news.example&cmp=c&adv=a&p1=1&p2=2&p3=3&p4=4&p5=5`, Date.now());
  t.equal(full.status, 200, full.body);
  expectPlain('after a GET lookup with every value');
  const bid = {
    id: 'r1',
    imp: [{ id: '1', banner: { w: 300, h: 250 } }],
    app: { bundle: 'com.example.game', publisher: { id: 'pub-bid' } },
    device: { ua: CHROME, ip: '73.162.10.51', devicetype: 4, ifa: '6d92078a-8246-4ba4-ae5b-76104861e7dd', geo: { country: 'DEU' } },
    user: { id: 'u-2' },
  };
  const ortb = e.lookupOrtb(`p=${PARTNER}&k=key-1&node=bidder-1&p3=x`, bidRequestOf(bid), Date.now());
  t.equal(ortb.status, 200, ortb.body);
  expectPlain('after a bid request');
});

t.test('clipDim: no value leaves it holding the separator; joined forms stay unambiguous', async (t) => {
  t.equal(clipDim('a\u001fb'), 'a\ufffdb');
  t.equal(clipDim('\u001f\u001f'), '\ufffd\ufffd');
  t.equal(clipDim('plain'), 'plain', 'other values are untouched');
  t.equal(clipDim('tab\there'), 'tab\there', 'other control characters are values like any other');
  const long = 'x'.repeat(300) + '\u001f';
  t.equal(clipDim(long), 'x'.repeat(256), 'cut first: a separator past the cut is gone with it');
  const a = ['a\u001fb', 'c'].map(clipDim);
  const b = ['a', 'b\u001fc'].map(clipDim);
  t.not(tupleKey('c1', 0, a), tupleKey('c1', 0, b), 'two tuples, two keys');
  t.same(splitDims(joinDims(a)), a, 'a joined tuple splits back into its values');
});
