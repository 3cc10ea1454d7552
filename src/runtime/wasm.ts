// The WebAssembly parts (AssemblyScript sources in src/*/wasm/, embedded as base64 by
// tools/build-wasm.ts) are compiled here: each module once per thread that imports it. A Node
// without WebAssembly (`--jitless`), or a CPU without the SIMD a module uses, does not stop
// ivtd: the module is noted as unavailable, its caller takes its JavaScript path, and the
// server says so once at start-up (wasmUnavailable).

const unavailable: string[] = [];

/** The compiled module, or null when this Node cannot run it (why: wasmUnavailable). */
export function compileWasm(name: string, base64: string): WebAssembly.Module | null {
  try {
    return new WebAssembly.Module(Buffer.from(base64, 'base64'));
  } catch (e) {
    const reason = typeof WebAssembly === 'undefined' ? 'this Node runs without WebAssembly (--jitless?)' : `WebAssembly refused ${name}: ${(e as Error).message}`;
    unavailable.push(`${name}: ${reason}`);
    return null;
  }
}

/** An instance of `module` (which imports nothing), its exports typed as `T`. */
export function instantiateWasm<T>(module: WebAssembly.Module): T {
  return new WebAssembly.Instance(module, {}).exports as unknown as T;
}

/** The value of the i32 global `name` a module exports (its memory layout's constants). */
export function wasmGlobal(exports: object, name: string): number {
  const g = (exports as Record<string, unknown>)[name];
  if (!(g instanceof WebAssembly.Global)) throw new Error(`WebAssembly module exports no global ${name}`);
  return g.value as number;
}

/** The modules this thread could not compile, each with why (empty: all run). */
export function wasmUnavailable(): readonly string[] {
  return unavailable;
}
