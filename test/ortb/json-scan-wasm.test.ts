// The embedded WebAssembly (src/ortb/json-scan-wasm.ts) is what its source compiles to:
// a change to src/ortb/wasm/json-scan.ts without `npm run build:wasm` fails here.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { WASM_MODULE, wasmModuleText } from '../../tools/build-wasm.ts';

t.test('src/ortb/json-scan-wasm.ts is the build of src/ortb/wasm/json-scan.ts', async (t) => {
  const built = await wasmModuleText();
  t.ok(built === readFileSync(WASM_MODULE, 'utf8'), 'the committed module is current: run `npm run build:wasm` and commit it');
});
