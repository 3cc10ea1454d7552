// The main thread's young generation. V8 doubles it whenever enough has survived since the
// last doubling, so in a long-running process it always reaches its maximum (16 MB per
// semi-space: 32 MB resident) and keeps it under load. Only a start-up flag
// (--max-semi-space-size) bounds that maximum, and a Node 20 single executable cannot carry
// one. The growth factor, read at each doubling, can be set from inside: at 1 the young
// generation keeps its initial size (1 MB per semi-space). Each new isolate (a worker
// thread) puts the factor back to at least 2 while V8 sets up its heap, so startWorker()
// sets it again once the worker is online. Lookup threads' young generations have their
// own bound (resourceLimits, src/prebid/lookup-threads.ts).
import { setFlagsFromString } from 'node:v8';

export function holdYoungGeneration(): void {
  setFlagsFromString('--semi-space-growth-factor=1');
}

holdYoungGeneration();
