// The main thread's young generation keeps its initial size (src/runtime/heap-flags.ts), also
// after a worker thread's start put V8's growth factor back; a plain Worker shows what
// happens without startWorker's re-setting (the figure the test could not fail without).
import t from 'tap';
import { execFileSync } from 'node:child_process';

function youngMb(mode: 'startWorker' | 'raw'): number {
  const out = execFileSync(process.execPath, ['--import', 'tsx', 'test/fixtures/runtime/young-generation.ts', mode], { encoding: 'utf8', timeout: 60_000 });
  return (JSON.parse(out.trim().split('\n').pop()!) as { youngMb: number }).youngMb;
}

// Held, it stays at its initial 4 MB here; once in CI (6 December 2026, the suite's other
// files running beside it) it measured 8 MB: one doubling, most likely while V8's factor was
// back at 2 between a new isolate's set-up and the hold (not reproduced: 4 MB in 24 runs,
// half of them beside two busy loops). Without the hold it reaches 16-32 MB (the
// control below), so at most one doubling still tells the two apart.
t.test('after startWorker the young generation stays at its initial size (one doubling at most)', async (t) => {
  const mb = youngMb('startWorker');
  t.ok(mb <= 8, `young generation ${mb} MB (V8's maximum is 32; a plain worker lets it reach 16 or more)`);
});

t.test('a worker started otherwise resets the growth factor, and the young generation grows', async (t) => {
  const mb = youngMb('raw');
  t.ok(mb >= 16, `young generation ${mb} MB`);
});

function threadYoungMb(mode: 'started' | 'held'): { startMb: number; loadedMb: number } {
  const out = execFileSync(process.execPath, ['--import', 'tsx', 'test/fixtures/runtime/thread-young-generation.ts', mode], { encoding: 'utf8', timeout: 60_000 });
  return JSON.parse(out.trim().split('\n').pop()!) as { startMb: number; loadedMb: number };
}

t.test("a worker's young generation starts at its bound, since it cannot grow either", async (t) => {
  const started = threadYoungMb('started');
  t.equal(started.startMb, 4, 'startingYoungGeneration(4): starts at 4 MB');
  t.equal(started.loadedMb, 4, 'and is 4 MB after the load');
  // (Whether V8 grows a thread started at 2 MB under the hold depends on its timing on a
  // busy host: the start is what the setting decides.)
  t.equal(threadYoungMb('held').startMb, 2, 'without it: V8 starts a thread at 2 MB');
});
