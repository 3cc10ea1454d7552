// The strict, bounded JSON parser that reads OpenRTB bodies (src/base/bounded-json.ts):
// it must agree with JSON.parse on valid JSON, refuse what JSON.parse refuses, and refuse
// what JSON.parse would take but a stranger's body must not carry (duplicate keys, keys
// naming a prototype, nesting, array and object sizes past the limits), never throwing.
import t from 'tap';
import { isJsonObject, parseBoundedJson, strictParse, type JsonLimits } from '../../src/base/bounded-json.ts';

const LIMITS: JsonLimits = { maxDepth: 8, maxArrayLength: 50, maxObjectKeys: 20 };
const parse = (s: string, l: JsonLimits = LIMITS) => parseBoundedJson(s, l);
const error = (s: string, l: JsonLimits = LIMITS) => {
  const r = parse(s, l);
  return r.ok ? 'parsed' : r.message;
};

t.test('agrees with JSON.parse on valid JSON', async (t) => {
  const docs = [
    '{}', '[]', 'null', 'true', 'false', '0', '-0', '12.5e-3', '1E+2', '"x"', ' \t\r\n{ "a" : [ 1 , 2 ] } \n',
    '{"id":"r1","imp":[{"id":"1","banner":{"w":300,"h":250}}],"device":{"ua":"Mozilla/5.0","geo":{"country":"USA"}}}',
    '"\\u00e9\\ud83d\\ude00\\n\\t\\"\\\\\\/\\b\\f\\r"', '"é😀 raw"', '[1.7976931348623157e308,-5e-324]', '{"a":{"b":{"c":[[[]]]}}}',
  ];
  for (const d of docs) {
    const r = parse(d);
    t.ok(r.ok, `parses ${d.slice(0, 40)}`);
    if (r.ok) t.same(r.value, JSON.parse(d), `same value as JSON.parse: ${d.slice(0, 40)}`);
  }
});

t.test('parsed objects hold their own keys only, and no key reaches Object.prototype', async (t) => {
  const r = parse('{"toString":"x","hasOwnProperty":1,"a":{"valueOf":2}}');
  t.ok(r.ok);
  if (!r.ok || !isJsonObject(r.value)) return;
  t.equal(r.value.toString, 'x', 'an inherited name sent as a key is just an own key');
  t.same(Object.keys(r.value), ['toString', 'hasOwnProperty', 'a']);
  t.equal(({} as Record<string, unknown>).polluted, undefined);
  t.equal(Object.getPrototypeOf(r.value), Object.prototype, 'an ordinary object (the fast path is JSON.parse)');
});

t.test('refuses what JSON.parse refuses, naming where', async (t) => {
  const bad = ['', ' ', '{', '}', '[1,]', '{"a":1,}', '{a:1}', "{'a':1}", '01', '1.', '.5', '-', '+1', '1e', 'NaN', 'Infinity', 'tru',
    'nul', '"abc', '"a\nb"', '"\\x"', '"\\u12g4"', '{"a" 1}', '[1 2]', '{} {}', '1e400'];
  for (const s of bad) {
    let native = true;
    try {
      JSON.parse(s);
    } catch {
      native = false;
    }
    const r = parse(s);
    t.notOk(r.ok, `refuses ${JSON.stringify(s)}`);
    if (!r.ok) t.match(r.message, /at character \d+$/, 'says where');
    // Out-of-range numbers JSON.parse takes; the rest it refuses too.
    if (s !== '1e400') t.notOk(native, `JSON.parse refuses ${JSON.stringify(s)} as well`);
  }
});

t.test('a lone surrogate in a \\u escape is read as U+FFFD, in strings and keys; a pair stays one character', async (t) => {
  // RFC 8259's grammar allows them (JSON.parse keeps them as they are); a sender that cut a
  // string inside an emoji writes one. Every string built must be well-formed.
  const cases: [string, unknown][] = [
    ['"\\ud800"', '\ufffd'],
    ['"\\udc00"', '\ufffd'],
    ['"\\ud800\\u0041"', '\ufffdA'],
    ['"\\ud83d\\ude00"', '\ud83d\ude00'],
    ['"a\\ud83d"', 'a\ufffd'],
    ['"\\ud83d\\ud83d\\ude00"', '\ufffd\ud83d\ude00'],
    ['"\\ude00\\ud83d"', '\ufffd\ufffd'],
    ['"\\ud83d\\n"', '\ufffd\n'],
    ['{"k\\udbff":["\\udfff",1]}', { 'k\ufffd': ['\ufffd', 1] }],
  ];
  for (const [text, want] of cases) {
    for (const [how, r] of [['parseBoundedJson', parse(text)], ['strictParse', strictParse(text, LIMITS)]] as const) {
      t.ok(r.ok, `${how} takes ${text}`);
      if (r.ok) t.same(r.value, want, `${how}: ${text}`);
    }
  }
  t.match(error('{"\\ud800":1,"\\udbff":2}'), /duplicate key "\ufffd"/, 'two keys that differ only in lone halves are one key once read');
});

t.test('refuses what a hostile body carries', async (t) => {
  t.match(error('{"a":1,"a":2}'), /duplicate key "a"/, 'duplicate keys (JSON.parse keeps the last)');
  t.match(error('{"device":{"ua":"x","ua":"y"}}'), /duplicate key "ua"/, 'duplicate keys nested');
  for (const k of ['__proto__', 'constructor', 'prototype']) {
    t.match(error(`{"${k}":{"polluted":1}}`), new RegExp(`key "${k}" is not allowed`), `${k} at the top`);
    t.match(error(`{"a":[{"${k}":1}]}`), /is not allowed/, `${k} nested`);
  }
  t.match(error('{"\\u005f_proto__":1}'), /is not allowed/, '__proto__ written with an escape');
  // The fast path counts keys by the colons outside strings: escaped quotes and colons in
  // strings must not let a duplicate through.
  t.match(error('{"a":1,"a":2,"b":"\\u003a"}'), /duplicate key "a"/, 'a duplicate beside an escaped colon');
  t.match(error('{"a":"x\\":y","a":2}'), /duplicate key "a"/, 'a duplicate after an escaped quote and a colon in a string');
  t.match(error('{"a":"\\\\","b":{"c":1,"c":1}}'), /duplicate key "c"/, 'a duplicate after an escaped backslash');
  t.equal(error('{"a:b":"c:d","e\\"f:":[":"]}'), 'parsed', 'colons in keys and strings are not keys');
  // Without escapes the fast path counts colons: those in built strings are not keys, and a
  // duplicate's dropped value or key cannot make up for the key it dropped.
  t.match(error('{"a:":1,"a:":2}'), /duplicate key "a:"/, 'a duplicate key holding a colon');
  t.match(error('{"a":"x:y","a":"z"}'), /duplicate key "a"/, 'a duplicate whose dropped value held a colon');
  t.match(error('{"u":"https://x","a":{"b":1},"a":{"b:c":2}}'), /duplicate key "a"/, 'a duplicate whose kept value holds more colons');
  t.equal(error('{"u":"https://a.example:8080/p?q=1:2","k:v":[":",{"x":"::"}]}'), 'parsed', 'colons in URLs, keys and arrays');
  t.match(error('{"a":1,"a":2,"b":"\\u003A"}'), /duplicate key "a"/, 'an escaped capital colon beside a duplicate');
  t.match(error('['.repeat(9) + ']'.repeat(9)), /nested deeper than 8/, 'nesting one past the limit');
  t.equal(error('['.repeat(8) + ']'.repeat(8)), 'parsed', 'nesting at the limit');
  t.match(error('['.repeat(100_000)), /nested deeper/, 'deep nesting stops at the limit, not the stack');
  t.match(error(`[${new Array(51).fill(0).join(',')}]`), /more than 50 elements/, 'an array past the limit');
  t.equal(error(`[${new Array(50).fill(0).join(',')}]`), 'parsed', 'an array at the limit');
  const keys = (n: number) => `{${Array.from({ length: n }, (_, i) => `"k${i}":0`).join(',')}}`;
  t.match(error(keys(21)), /more than 20 keys/, 'an object past the key limit');
  t.equal(error(keys(20)), 'parsed', 'an object at the key limit');
  t.match(error(`{"${'k'.repeat(500)}":1,"${'k'.repeat(500)}":2}`), /duplicate key "k{40}…"/, 'a long duplicate key is clipped in the message');
});

t.test('never throws on random input', async (t) => {
  let seed = 7;
  const rnd = (n: number) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return (seed >>> 8) % n;
  };
  const alphabet = '{}[]":,\\u0123456789abcdeftrnl-+.eE \n_proto';
  let parsed = 0;
  for (let i = 0; i < 20_000; i++) {
    let s = '';
    for (let j = rnd(40); j > 0; j--) s += alphabet[rnd(alphabet.length)];
    const r = parse(s);
    const strict = strictParse(s, LIMITS);
    if (r.ok !== strict.ok || (!r.ok && !strict.ok && r.message !== strict.message)) t.fail(`the fast path and the JS parser disagree on ${JSON.stringify(s)}`);
    if (r.ok) {
      parsed++;
      t.same(r.value, JSON.parse(s), `agrees with JSON.parse on ${s}`);
    }
  }
  t.ok(parsed > 0, `some random strings were JSON (${parsed})`);
  // Valid JSON with duplicates, escapes and colons everywhere: the fast path must refuse
  // exactly what the JS parser refuses.
  let dups = 0;
  for (let i = 0; i < 5000; i++) {
    const keys = ['a', 'b', 'a:', '\\"', '\\u0061', ':', 'c\\\\'];
    const member = () => `"${keys[rnd(keys.length)]}":${['1', '"\\u003a"', '":"', '"\\\\"', '{}', '[":",{"a":1}]'][rnd(6)]}`;
    const obj = (d: number): string => `{${Array.from({ length: rnd(4) }, () => (d > 0 && rnd(3) === 0 ? `"o":${obj(d - 1)}` : member())).join(',')}}`;
    const s = obj(3);
    const r = parse(s);
    const strict = strictParse(s, LIMITS);
    if (r.ok !== strict.ok) t.fail(`the fast path and the JS parser disagree on ${s}`);
    if (!strict.ok) dups++;
  }
  t.ok(dups > 500, `duplicates were among them (${dups} refused)`);
});
