// The main thread's young generation. V8 doubles it whenever enough has survived since the
// last doubling, so in a long-running process it always reaches its maximum (16 MB per
// semi-space: 32 MB resident) and keeps it under load. Only a start-up flag
// (--max-semi-space-size) bounds that maximum, and a Node 20 single executable cannot carry
// one. The growth factor, read at each doubling, can be set from inside: at 1 the young
// generation keeps its initial size (1 MB per semi-space). Each new isolate (a worker
// thread) puts the factor back to at least 2 while V8 sets up its heap, so startWorker()
// sets it again once the worker is online. A worker's young generation, which can then no
// longer grow either, starts at its own bound instead (startingYoungGeneration): a lookup
// thread's is 4 MB (resourceLimits, src/server/lookup-threads.ts), where it would otherwise
// stay at half that and collect twice as often. (On a busy host a worker may grow before
// the main thread has seen it online: starting at its bound makes that moot.)
import { setFlagsFromString } from 'node:v8';

export function holdYoungGeneration(): void {
  setFlagsFromString('--semi-space-growth-factor=1');
}

/** Before a worker starts: its young generation (two semi-spaces) begins at `youngMb`, read while V8 sets up its heap. */
export function startingYoungGeneration(youngMb: number): void {
  setFlagsFromString(`--min-semi-space-size=${Math.max(1, Math.floor(youngMb / 2))}`);
}

holdYoungGeneration();
