// bench:profile's reading of `perf script` output (bench/perf-samples.ts), on hand-written
// samples and a hand-written bundle: which thread is the lookup thread, where each sample
// is counted, JavaScript by the module of its innermost JS frame, and telling a stale
// bundle from the one that ran.
import t from 'tap';
import { BundleIndex, busiestThread, CATEGORIES, parsePerfScript, profileThread } from '../../bench/perf-samples.ts';

// A bundle as esbuild writes it: each module opened by a `// src/…` line.
const BUNDLE = [
  '"use strict";', // 1
  '// src/signals/history.ts', // 2
  'function visit(k, now) {', // 3
  '  return k;', // 4
  '}', // 5
  '// src/prebid/pipeline.ts', // 6
  'var Engine = class {', // 7
  '  verdict(q) {', // 8
  '    return visit(q, 0);', // 9
  '  }', // 10
  '};', // 11
].join('\n');
const PATH = '/build/dist/ivtd.build/ivtd.cjs';

// Frames innermost first, as `perf script -F tid,ip,sym` prints them.
const sample = (tid: number, ...frames: string[]) => `${tid}     200040 \n${frames.map((f, i) => `\t    ${(0x1000 + i).toString(16)} ${f}`).join('\n')}\n`;
const TEXT = [
  // The lookup thread (7): two samples in visit (one in an Atomics builtin it calls), one in verdict...
  sample(7, 'JS:*visit [worker eval]:3:15', 'JS:*verdict [worker eval]:8:10', 'Builtins_JSEntry'),
  sample(7, 'Builtins_AtomicsCompareExchange', 'JS:*visit [worker eval]:3:15', 'JS:*verdict [worker eval]:8:10'),
  sample(7, 'JS:*verdict [worker eval]:8:10', 'Builtins_JSEntry'),
  // ...a send that wakes the client, a plain send, a recv, a scavenge under JS, WebAssembly, the event loop.
  sample(7, '_raw_spin_unlock_irqrestore', '__wake_up_sync_key', 'sock_def_readable', 'tcp_sendmsg', '__send', '[unknown]'),
  sample(7, 'tcp_sendmsg_locked', 'tcp_sendmsg', '__send'),
  sample(7, '_copy_to_iter', 'tcp_recvmsg', '__libc_recv'),
  sample(7, 'v8::internal::ScavengerCollector::CollectGarbage', 'v8::internal::Heap::CollectGarbage', 'JS:*verdict [worker eval]:8:10'),
  sample(7, 'JS:wasm-function[0]-0-turbofan', 'JS:*verdict [worker eval]:8:10'),
  sample(7, 'ep_poll', 'epoll_pwait', 'uv__io_poll', 'uv_run'),
  sample(7, 'v8::String::Utf8Length', 'v8::String::Utf8Value::Utf8Value', '[unknown]'),
  sample(7, '[unknown]'),
  // The main thread (3): less busy.
  sample(3, 'JS:~main /build/dist/ivtd.build/ivtd.cjs:3:15'),
  sample(3, 'epoll_pwait'),
].join('\n');

t.test('perf script text: samples, threads, frames in order', async (t) => {
  const s = parsePerfScript(TEXT);
  t.equal(s.length, 13);
  t.same(s[0], { tid: 7, period: 200040, frames: ['JS:*visit [worker eval]:3:15', 'JS:*verdict [worker eval]:8:10', 'Builtins_JSEntry'] });
  t.same(busiestThread(s), { tid: 7, samples: 11 });
  t.same(parsePerfScript('  42 \n\t 1 f\n\n'), [{ tid: 42, period: 0, frames: ['f'] }], 'a padded thread id, no period');
  t.same(parsePerfScript('42 5\n\t 1 f\n42 6\n\t 2 g\n'), [{ tid: 42, period: 5, frames: ['f'] }, { tid: 42, period: 6, frames: ['g'] }], 'no blank line between samples');
  t.same(parsePerfScript(''), []);
});

t.test('each sample counted once, by the first rule its chain matches', async (t) => {
  const p = profileThread(parsePerfScript(TEXT), 7, new BundleIndex(PATH, BUNDLE));
  const by = Object.fromEntries(p.categories.map((c) => [c.label, c.samples]));
  t.same(by, {
    'kernel: send, waking the client': 1,
    'kernel: send (the TCP path, to the peer on loopback)': 1,
    'kernel: recv': 1,
    "V8's garbage collector": 1,
    'JavaScript (the handlers and all they call)': 4,
    "uWebSockets.js's bindings (strings and buffers across to V8, malloc)": 1,
    'event loop and uWebSockets.js': 1,
    'other (no caller perf could name)': 1,
  });
  t.equal(p.samples, 11);
  t.equal(p.ns, 11 * 200040, "the thread's time: its samples' periods");
  t.equal(p.categories.reduce((a, c) => a + c.samples, 0), 11, 'every sample somewhere');
  t.equal(p.categories.length, CATEGORIES.length);
});

t.test('JavaScript by the module of its innermost JS frame; builtins and WebAssembly count for their caller', async (t) => {
  const p = profileThread(parsePerfScript(TEXT), 7, new BundleIndex(PATH, BUNDLE));
  t.same(p.modules, [
    { label: 'src/signals/history.ts', samples: 2 },
    { label: 'src/prebid/pipeline.ts', samples: 2 },
  ]);
  const self = Object.fromEntries(p.functions.map((f) => [f.label, f.samples]));
  t.equal(self['src/signals/history.ts visit'], 1);
  t.equal(self['src/prebid/pipeline.ts verdict'], 1);
  t.equal(self['Builtins_AtomicsCompareExchange'], 1);
  t.equal(self['JS:wasm-function[0]-0-turbofan'], 1);
  t.equal(p.bundleAgreement, 1, 'every named frame stands at its line');
});

t.test('a bundle that is not the one that ran is told apart', async (t) => {
  // The same modules, every line moved down by two: the frames' names no longer stand where they point.
  const stale = new BundleIndex(PATH, `// tools/x.ts\n\n${BUNDLE}`);
  const p = profileThread(parsePerfScript(TEXT), 7, stale);
  t.equal(p.bundleAgreement, 0);
  const none = profileThread(parsePerfScript(TEXT), 7, null);
  t.same(none.modules.map((m) => m.label), ['[worker eval]'], 'without a bundle, the file the frames name');
});

t.test('a bundle index: modules by line, the frames\' file', async (t) => {
  const b = new BundleIndex(PATH, BUNDLE);
  t.equal(b.moduleAt(1), '', 'before the first module');
  t.equal(b.moduleAt(2), 'src/signals/history.ts');
  t.equal(b.moduleAt(5), 'src/signals/history.ts');
  t.equal(b.moduleAt(9), 'src/prebid/pipeline.ts');
  t.ok(b.isBundle('[worker eval]'), "a lookup thread's eval of the embedded bundle");
  t.ok(b.isBundle('/elsewhere/dist/ivtd.build/ivtd.cjs'), 'built in another directory');
  t.notOk(b.isBundle('node:buffer'));
  t.ok(b.hasNameAt('verdict', 8, 10));
  t.notOk(b.hasNameAt('visit', 8, 10));
});
