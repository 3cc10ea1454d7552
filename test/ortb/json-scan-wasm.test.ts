// The embedded WebAssembly (src/ortb/json-scan-wasm.ts) is what its source compiles to:
// a change to src/ortb/wasm/json-scan.ts without `npm run build:wasm` fails here. And a Node
// without WebAssembly still reads bid requests (by the reference parser).
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { WASM_MODULE, wasmModuleText } from '../../tools/build-wasm.ts';

t.test('src/ortb/json-scan-wasm.ts is the build of src/ortb/wasm/json-scan.ts', async (t) => {
  const built = await wasmModuleText();
  t.ok(built === readFileSync(WASM_MODULE, 'utf8'), 'the committed module is current: run `npm run build:wasm` and commit it');
});

t.test('without WebAssembly (node --jitless) every body goes to the reference, and the reason is there to log', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-jitless-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const script = join(dir, 'probe.ts');
  const src = (p: string) => JSON.stringify(fileURLToPath(new URL(p, import.meta.url)));
  writeFileSync(script, [
    `import { bidRequestFrom } from ${src('../../src/ortb/body.ts')};`,
    `import { jsonScanUnavailable } from ${src('../../src/ortb/pruned-json.ts')};`,
    `const r = bidRequestFrom(new TextEncoder().encode('{"id":"1","imp":[{"id":"1"}],"device":{"ip":"1.2.3.4"}}'), false);`,
    'console.log(JSON.stringify({ reason: jsonScanUnavailable, r }));',
  ].join('\n'));
  const out = JSON.parse(execFileSync(process.execPath, ['--jitless', '--import', 'tsx', script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
  t.match(out.reason, /without WebAssembly/);
  // The reference builds the whole body (imp[0].id too); the scan would have left `id` out of the impression.
  t.same(out.r, { ok: true, bid: { id: '1', imp: [{ id: '1' }], device: { ip: '1.2.3.4' } } });
});
