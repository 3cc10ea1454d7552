import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SCHAIN_MAX_NODES, SCHAIN_SHAPE, parseSchain, schainFromObject as fromFields, type SchainResult, type SupplyChain } from '../../src/signals/schain.ts';
import { compileShape, prune } from '../../src/base/shape.ts';
import type { JsonValue } from '../../src/base/bounded-json.ts';

/** schainFromObject of a JSON value, read by the supply chain's shape as a bid request's body is. */
const schainFromObject = (v: unknown) => fromFields(prune(v as JsonValue, compileShape(SCHAIN_SHAPE)));
import { SellersRegistry } from '../../src/signals/sellers.ts';

function chainOf(r: SchainResult): SupplyChain {
  if (!r.ok) throw new Error(`expected a chain, got ${r.error}`);
  return r.chain;
}

const node = (asi: string, sid: string, hp: 0 | 1 = 1, rid = '', name = '', domain = '') => ({
  asi, sid, hp, rid, name, domain,
});

t.test('parses the spec examples', async (t) => {
  t.same(parseSchain('1.0,1!exchange1.com,1234,1,bid-request-1,publisher,publisher.com'), {
    ok: true,
    chain: { ver: '1.0', complete: 1, nodes: [node('exchange1.com', '1234', 1, 'bid-request-1', 'publisher', 'publisher.com')] },
  });
  t.same(
    chainOf(parseSchain(
      '1.0,1!exchange1.com,1234,1,bid-request-1,publisher,publisher.com!exchange2.com,abcd,1,bid-request-2,intermediary,intermediary.com',
    )).nodes,
    [
      node('exchange1.com', '1234', 1, 'bid-request-1', 'publisher', 'publisher.com'),
      node('exchange2.com', 'abcd', 1, 'bid-request-2', 'intermediary', 'intermediary.com'),
    ],
    'multi-node',
  );
  t.same(chainOf(parseSchain('1.0,0!exchange2.com,abcd,1,,,')), { ver: '1.0', complete: 0, nodes: [node('exchange2.com', 'abcd')] }, 'incomplete, empty optionals');
  t.same(chainOf(parseSchain('1.0,1!exchange1.com,1234,0')).nodes, [node('exchange1.com', '1234', 0)], 'trailing optionals omitted, hp=0');
  t.same(
    chainOf(parseSchain('1.0,1!exchange1.com,1234,1,,,!exchange2.com,abcd,1')).nodes,
    [node('exchange1.com', '1234'), node('exchange2.com', 'abcd')],
    'mixed omitted and empty optionals',
  );
  t.same(
    chainOf(parseSchain('1.0,1!exchange1.com,1234%21abcd,1,bid-request-1,publisher%2c%20Inc.,publisher.com')).nodes,
    [node('exchange1.com', '1234!abcd', 1, 'bid-request-1', 'publisher, Inc.', 'publisher.com')],
    'encoded ! and lowercase %2c inside fields',
  );
  t.same(
    chainOf(parseSchain('1.0,1!exchange1.com,123%2CB,1,,,')).nodes,
    [node('exchange1.com', '123,B')],
    'sid with %2C',
  );
  t.same(
    chainOf(parseSchain('1.0,1!exchange1.com,12345,1,bid-request-1,publisher,publisher.com,%7B%22ext%22%3A%22test%22%7D')).nodes,
    [node('exchange1.com', '12345', 1, 'bid-request-1', 'publisher', 'publisher.com')],
    '7th field (ext) accepted, not kept',
  );
  t.same(chainOf(parseSchain('1.0,1!exchange1.com,12345,1,,,,')).nodes, [node('exchange1.com', '12345')], 'prebid-server style empty ext');
  t.same(chainOf(parseSchain('1.0,1!exchange1.com,a+b,1')).nodes[0]?.sid, 'a+b', '+ is not a space (RFC 3986)');
});

t.test('wholly URL-encoded values are decoded once first', async (t) => {
  const plain = '1.0,1!exchange1.com,1234,1,bid-request-1,publisher,publisher.com!exchange2.com,abcd,1,bid-request-2,intermediary,intermediary.com';
  t.same(parseSchain(encodeURIComponent(plain)), parseSchain(plain), 'encodeURIComponent of the whole string');
  // Fields double-encoded: "Pub, Inc." -> %2C -> %252C.
  const r = chainOf(parseSchain('1.0%2C1%21exchange1.com%2C1234%2C1%2C%2CPub%252C%2520Inc.%2Cpub.com'));
  t.same(r.nodes, [node('exchange1.com', '1234', 1, '', 'Pub, Inc.', 'pub.com')]);
  t.same(parseSchain('1.0%2C1%21exchange1.com%2C1234'), { ok: false, error: 'node_too_few_fields' }, 'errors still found after decoding');
});

t.test('accepts exactly the max node count', async (t) => {
  const nodes = Array.from({ length: SCHAIN_MAX_NODES }, (_, i) => `ex${i}.com,s${i},1`).join('!');
  t.equal(chainOf(parseSchain(`1.0,1!${nodes}`)).nodes.length, SCHAIN_MAX_NODES);
  t.same(parseSchain(`1.0,1!${nodes}!one-more.com,x,1`), { ok: false, error: 'too_many_nodes' });
});

t.test('rejects bad strings with a stable code, without throwing', async (t) => {
  const bad: Array<[string, string]> = [
    ['', 'empty'],
    ['1.0,1!' + 'a'.repeat(9000) + ',1,1', 'too_long'],
    ['1.0,1', 'no_nodes'],
    ['1.0,1!', 'empty_node'],
    ['1.0,1!exchange1.com,1234,1!', 'empty_node'],
    ['1.0,1!!exchange1.com,1234,1', 'empty_node'],
    ['1.0!exchange1.com,1234,1', 'bad_header'],
    ['1.0,1,0!exchange1.com,1234,1', 'bad_header'],
    ['exchange1.com,1234,1', 'bad_header'],
    ['1,1!exchange1.com,1234,1', 'bad_version'],
    ['v1.0,1!exchange1.com,1234,1', 'bad_version'],
    [',1!exchange1.com,1234,1', 'bad_version'],
    ['1.0.0,1!exchange1.com,1234,1', 'bad_version'],
    ['1.0,2!exchange1.com,1234,1', 'bad_complete'],
    ['1.0,!exchange1.com,1234,1', 'bad_complete'],
    ['1.0,yes!exchange1.com,1234,1', 'bad_complete'],
    ['1.0,1!exchange1.com,1234', 'node_too_few_fields'],
    ['1.0,1!exchange1.com', 'node_too_few_fields'],
    ['1.0,1!exchange1.com,1234,1,r,n,d,ext,extra', 'node_too_many_fields'],
    ['1.0,1!exchange1.com,1234,1,,,,,', 'node_too_many_fields'],
    ['1.0,1!,1234,1', 'empty_asi'],
    ['1.0,1!%20,1234,1', 'empty_asi'],
    ['1.0,1!exchange1.com,,1', 'empty_sid'],
    ['1.0,1!exchange1.com,1234,', 'bad_hp'],
    ['1.0,1!exchange1.com,1234,2', 'bad_hp'],
    ['1.0,1!exchange1.com,1234,true', 'bad_hp'],
    ['1.0,1!exchange1.com,1234,1!exchange2.com,abcd,x', 'bad_hp'],
    ['1.0,1!exchange1.com,12%2,1', 'bad_encoding'],
    ['1.0,1!exchange1.com,12%ZZ,1', 'bad_encoding'],
    ['1.0,1!exchange1.com,%FF,1', 'bad_encoding'],
    ['1.0,1!exchange1.com,1234,1,,,,%E0%A4', 'bad_encoding'],
    ['1.0%2C1%21exchange1.com%2C1234%2', 'bad_encoding'],
    ['1.0%2C1', 'no_nodes'],
    ['hello', 'bad_header'],
  ];
  for (const [raw, error] of bad) {
    let r: SchainResult | undefined;
    t.doesNotThrow(() => {
      r = parseSchain(raw);
    });
    t.same(r, { ok: false, error }, `${JSON.stringify(raw.slice(0, 60))} → ${error}`);
  }
});

const EX1 = JSON.stringify({
  contact_email: 'adops@exchange1.com',
  version: '1.0',
  sellers: [
    { seller_id: '1234', name: 'Publisher', domain: 'publisher.com', seller_type: 'PUBLISHER' },
    { seller_id: ' 5678 ', seller_type: 'PUBLISHER', is_confidential: 1 },
    { seller_id: 9001, name: 'Numeric Id Pub', domain: 'numeric.com', seller_type: 'PUBLISHER' },
  ],
});
const EX2 = JSON.stringify({
  sellers: [{ seller_id: 'abcd', name: 'Intermediary', domain: 'intermediary.com', seller_type: 'INTERMEDIARY' }],
});

t.test('SellersRegistry.verify', async (t) => {
  const { registry, errors } = SellersRegistry.fromFiles([
    { name: 'exchange1.com.json', text: EX1 },
    { name: 'sellers/Exchange2.COM.json', text: '\uFEFF' + EX2 }, // path prefix, upper case, BOM
  ]);
  t.same(errors, []);
  t.equal(registry.size, 2);
  t.same(registry.domains(), ['exchange1.com', 'exchange2.com']);
  t.ok(registry.has('exchange1.com'));
  t.ok(registry.has('EXCHANGE2.com'), 'asi compared case-insensitively');
  t.notOk(registry.has('exchange3.com'));
  const verify = (raw: string) => registry.verify(chainOf(parseSchain(raw)));
  for (const sid of ['1234', '5678', '9001']) t.ok(verify(`1.0,1!exchange1.com,${sid},1`), `${sid}: trimmed, numeric as text`);
  t.notOk(registry.has('nope.com'));

  t.equal(verify('1.0,1!exchange1.com,1234,1,bid-request-1,publisher,publisher.com'), true, 'single known node');
  t.equal(verify('1.0,1!exchange1.com,1234,1!exchange2.com,abcd,1'), true, 'every node known');
  t.equal(verify('1.0,1!Exchange1.com,5678,1'), true, 'asi case-insensitive, seller_id trimmed');
  t.equal(verify('1.0,1!exchange1.com,9001,1'), true, 'numeric seller_id');
  t.equal(verify('1.0,1!exchange1.com,%201234%20,1'), true, 'sid trimmed');
  t.equal(verify('1.0,1!exchange1.com,1234,1!exchange2.com,zzzz,1'), false, 'one unknown sid');
  t.equal(verify('1.0,1!exchange1.com,1234,1!exchange3.com,abcd,1'), false, 'one unknown asi');
  t.equal(verify('1.0,1!exchange1.com,ABCD,1!exchange2.com,abcd,1'), false, 'sid listed only at the other asi');
  t.equal(verify('1.0,1!exchange2.com,ABCD,1'), false, 'seller_id is case-sensitive');
  t.equal(registry.verify({ ver: '1.0', complete: 1, nodes: [] }), false, 'no nodes, nothing verified');
  t.equal(SellersRegistry.empty().verify(chainOf(parseSchain('1.0,1!exchange1.com,1234,1'))), false, 'empty registry');
});

t.test('bad sellers files are reported and skipped; the rest load', async (t) => {
  const { registry, errors } = SellersRegistry.fromFiles([
    { name: 'good.com.json', text: EX2 },
    { name: 'notjson.com.json', text: '{"sellers": [' },
    { name: 'array.com.json', text: '[]' },
    { name: 'nosellers.com.json', text: '{"contact_email":"x@y.com"}' },
    { name: 'sellersobject.com.json', text: '{"sellers":{"seller_id":"1"}}' },
    { name: 'partly.com.json', text: '{"sellers":[{"seller_id":"ok-1"},{"name":"no id"},"junk",{"seller_id":"  "},{"seller_id":true}]}' },
    { name: 'empty-list.com.json', text: '{"sellers":[]}' },
    { name: 'GOOD.com.json', text: EX1 },
    { name: 'not a domain.json', text: EX2 },
    { name: 'README.md', text: '# not a sellers file' },
  ]);
  t.same(registry.domains(), ['empty-list.com', 'good.com', 'partly.com']);
  const verify = (raw: string) => registry.verify(chainOf(parseSchain(raw)));
  t.ok(verify('1.0,1!partly.com,ok-1,1'), 'the good entry of a partly bad file is kept');
  t.ok(verify('1.0,1!good.com,abcd,1'));
  t.notOk(verify('1.0,1!good.com,1234,1'), 'duplicate domain file did not replace the first');
  t.equal(registry.verify(chainOf(parseSchain('1.0,1!empty-list.com,1,1'))), false, 'file with no sellers verifies nothing');
  t.equal(errors.length, 7);
  const errorFor = (name: string) => errors.find((e) => e.startsWith(`${name}: `));
  t.match(errorFor('notjson.com.json'), /not JSON/);
  t.match(errorFor('array.com.json'), /not a JSON object/);
  t.match(errorFor('nosellers.com.json'), /no "sellers" array/);
  t.match(errorFor('sellersobject.com.json'), /no "sellers" array/);
  t.match(errorFor('partly.com.json'), /4 of 5 sellers entries/);
  t.match(errorFor('GOOD.com.json'), /duplicate sellers file for good\.com/);
  t.match(errorFor('not a domain.json'), /not <domain>\.json/);
  t.equal(errorFor('README.md'), undefined, 'non-.json files are ignored, not errors');
});

t.test('the embedded example sellers files are valid and verify the demo chain', async (t) => {
  const dir = fileURLToPath(new URL('../../data/sellers/', import.meta.url));
  const files = readdirSync(dir).map((name) => ({ name, text: readFileSync(dir + name, 'utf8') }));
  const { registry, errors } = SellersRegistry.fromFiles(files);
  t.same(errors, []);
  t.ok(registry.size >= 1);
  t.equal(registry.verify(chainOf(parseSchain('1.0,1!exchange1.example,1234,1!exchange2.example,abcd,1'))), true);
  t.equal(registry.verify(chainOf(parseSchain('1.0,1!exchange1.example,9999,1'))), false);
});

t.test('a chain encoded once more with its commas left literal still has its escapes checked', async (t) => {
  // encodeURI-style: % became %25, the delimiters stayed. The chain it carries has a broken escape.
  t.match(parseSchain('1.0,1!exchange1.com,1234%25ZZ,1,,,'), { ok: false, error: 'bad_encoding' });
  // The same chain with a well-formed escape decodes to its fields.
  t.match(parseSchain('1.0,1!exchange1.com,1234,1,,Some%252C%2520Name,'), { ok: true, chain: { nodes: [{ sid: '1234', name: 'Some, Name' }] } });
  t.match(parseSchain('1.0,1!exchange1.com,1234%ZZ,1,,,'), { ok: false, error: 'bad_encoding' }, 'and the raw broken escape too');
});

t.test('lookup threads verify against the main thread\'s compiled index, not their own copy', async (t) => {
  const sellers = Array.from({ length: 50_000 }, (_, i) => ({ seller_id: `s-${i}`, seller_type: 'PUBLISHER' }));
  const { registry } = SellersRegistry.fromFiles([{ name: 'big.example.json', text: JSON.stringify({ sellers }) }, { name: 'exchange1.com.json', text: EX1 }]);
  t.ok(registry.index.buffer instanceof SharedArrayBuffer, 'the index lives in shared memory');
  t.equal(registry.sellerCount, 50_003);
  const thread = SellersRegistry.fromIndex(registry.index);
  const verify = (r: SellersRegistry, raw: string) => r.verify(chainOf(parseSchain(raw)));
  for (const raw of ['1.0,1!big.example,s-49999,1', '1.0,1!BIG.example,s-7,1', '1.0,1!big.example,s-50000,1', '1.0,1!exchange1.com,1234,1!big.example,s-1,1', '1.0,1!other.example,s-1,1']) {
    t.equal(verify(thread, raw), verify(registry, raw), raw);
  }
  t.ok(verify(thread, '1.0,1!big.example,s-49999,1'));
  t.notOk(verify(thread, '1.0,1!big.example,s-50000,1'));
  t.ok(thread.has('big.example') && !thread.has('other.example'));
  t.throws(() => SellersRegistry.fromIndex(registry.index.subarray(0, 40)), /truncated/);
});

t.test('the object form (OpenRTB source.schain) follows the string form rules', async (t) => {
  const node = { asi: 'exchange1.example', sid: '1234', hp: 1, rid: 'bid-request-1', name: 'publisher', domain: 'publisher.example' };
  const obj = schainFromObject({ ver: '1.0', complete: 1, nodes: [node], ext: { x: 1 } });
  const str = parseSchain('1.0,1!exchange1.example,1234,1,bid-request-1,publisher,publisher.example');
  t.same(obj, str, 'the same chain as its string form');
  t.same(schainFromObject({ ver: '1.0', complete: 0, nodes: [{ asi: 'a.example', sid: '1', hp: 1, rid: 7 }] }), {
    ok: true, chain: { ver: '1.0', complete: 0, nodes: [{ asi: 'a.example', sid: '1', hp: 1, rid: '', name: '', domain: '' }] },
  }, 'optional fields of another type are dropped');
  const code = (v: unknown) => {
    const r = schainFromObject(v);
    return r.ok ? 'ok' : r.error;
  };
  t.equal(code('1.0,1!a,1,1'), 'bad_header', 'a string where the object belongs');
  t.equal(code([]), 'bad_header', 'an array');
  t.equal(code(null), 'bad_header', 'null');
  t.equal(code({ ver: 1, complete: 1, nodes: [node] }), 'bad_version', 'a numeric ver');
  t.equal(code({ ver: '1.0', complete: '1', nodes: [node] }), 'bad_complete', 'a string complete');
  t.equal(code({ ver: '1.0', complete: 1, nodes: [] }), 'no_nodes');
  t.equal(code({ ver: '1.0', complete: 1 }), 'no_nodes', 'nodes missing');
  t.equal(code({ ver: '1.0', complete: 1, nodes: new Array(SCHAIN_MAX_NODES + 1).fill(node) }), 'too_many_nodes');
  t.equal(code({ ver: '1.0', complete: 1, nodes: [null] }), 'empty_node');
  t.equal(code({ ver: '1.0', complete: 1, nodes: [{ ...node, asi: ' ' }] }), 'empty_asi');
  t.equal(code({ ver: '1.0', complete: 1, nodes: [{ ...node, sid: 1234 }] }), 'empty_sid', 'a numeric sid');
  t.equal(code({ ver: '1.0', complete: 1, nodes: [{ ...node, hp: true }] }), 'bad_hp');
});
