// Each embedded WebAssembly module (tools/build-wasm.ts's list) is what its source compiles
// to: a change to an AssemblyScript source without `npm run build:wasm` fails here. And a
// Node without WebAssembly still reads bid requests (by the reference parser) and signs lids.
import t from 'tap';
import { BID_REQUEST_SHAPE } from '../src/prebid/ortb/map.ts';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { jsonScanWasm } from '../src/prebid/ortb/pruned-json.ts';
import { LidCodec, emptyLidInput, lidSipWasm } from '../src/prebid/lid.ts';
import { wasmUnavailable } from '../src/runtime/wasm.ts';
import { WASM_MODULES, wasmModuleText, wasmOutputPath } from '../tools/build-wasm.ts';

for (const m of WASM_MODULES) {
  t.test(`${m.output} is the build of ${m.source}`, async (t) => {
    const built = await wasmModuleText(m);
    t.ok(built === readFileSync(wasmOutputPath(m), 'utf8'), 'the committed module is current: run `npm run build:wasm` and commit it');
  });
}

/** A lid made from fixed inputs (the same in the parent and the --jitless child). */
const LID_PROBE = [
  `const codec = new LidCodec(Uint8Array.from({ length: 16 }, (_, i) => i * 7), 12345);`,
  `const x = emptyLidInput(); x.customerId = '0b6c7c8e-3a52-4f0e-9a51-5d2f3e4a1b2c'; x.at = 1763950000123; x.ipHi = 3; x.tupleLo = 0xffffffff;`,
  `const lid = codec.make(x);`,
];

t.test('without WebAssembly (node --jitless) every body goes to the reference, lids are signed alike, queries are read, and the reason is there to log', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-jitless-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const script = join(dir, 'probe.ts');
  const src = (p: string) => JSON.stringify(fileURLToPath(new URL(p, import.meta.url)));
  writeFileSync(script, [
    `import { bidRequestFrom } from ${src('../src/prebid/ortb/body.ts')};`,
    `import { jsonScanWasm } from ${src('../src/prebid/ortb/pruned-json.ts')};`,
    `import { LidCodec, emptyLidInput, lidSipWasm } from ${src('../src/prebid/lid.ts')};`,
    `import { QueryScanner, queryScanWasm } from ${src('../src/prebid/query.ts')};`,
    `import { wasmUnavailable } from ${src('../src/runtime/wasm.ts')};`,
    `const qs = new QueryScanner();`,
    `const scanned = [qs.scan('pub=a&ua=Mozilla%2F5.0%20(X11)&cb=' + 'x'.repeat(40)), qs.values[5], qs.scan('pub=a&cb=' + 'x'.repeat(20) + '#')?.code];`,
    `import { BID_REQUEST_SHAPE } from ${src('../src/prebid/ortb/map.ts')};`,
    `import { keysOf } from ${src('../src/base/shape.ts')};`,
    `const parsed = bidRequestFrom(new TextEncoder().encode('{"id":"1","imp":[{"id":"1","banner":{"w":300}}],"device":{"ip":"1.2.3.4"}}'), false);`,
    `const B = keysOf(BID_REQUEST_SHAPE), D = keysOf(BID_REQUEST_SHAPE.device), I = keysOf(BID_REQUEST_SHAPE.imp[0]);`,
    `const r = parsed.ok ? { id: parsed.bid.at[B.id], ip: parsed.bid.at[B.device].at[D.ip], w: parsed.bid.at[B.imp][0].at[I.banner].at[0], fields: parsed.bid.at[B.imp][0].at.length } : parsed;`,
    ...LID_PROBE,
    'console.log(JSON.stringify({ jsonScanWasm, r, lid, lidSipWasm, queryScanWasm, scanned, unavailable: wasmUnavailable() }));',
  ].join('\n'));
  const out = JSON.parse(execFileSync(process.execPath, ['--jitless', '--import', 'tsx', script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
  t.equal(out.jsonScanWasm, false);
  t.equal(jsonScanWasm, true);
  t.match(out.unavailable.find((m: string) => m.startsWith('the JSON scan: ')), /without WebAssembly/);
  // The reference's value, read by the mapping's shape as the scan's would be.
  t.same(out.r, { id: '1', ip: '1.2.3.4', w: 300, fields: Object.keys(BID_REQUEST_SHAPE.imp[0]).length });
  // The child signed with the JavaScript SipHash, this process with the WebAssembly one.
  t.equal(out.lidSipWasm, false);
  t.equal(lidSipWasm, true);
  const lid = new Function('LidCodec', 'emptyLidInput', `${LID_PROBE.join('\n')}\nreturn lid;`)(LidCodec, emptyLidInput);
  t.equal(out.lid, lid, 'the same lid');
  // And it read queries with the JavaScript first pass.
  t.equal(out.queryScanWasm, false);
  t.same(out.scanned, [null, 'Mozilla/5.0 (X11)', 'forbidden_character']);
  // What the server's start-up warning lists: every module, each with why; none in this process.
  t.same([...out.unavailable].sort(), ['the JSON scan', 'the lid SipHash', 'the query pass'].map((m) => `${m}: this Node runs without WebAssembly (--jitless?)`));
  t.same(wasmUnavailable(), []);
});
