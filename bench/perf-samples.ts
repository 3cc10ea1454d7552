// Reading `perf script -F tid,ip,sym` output of an ivtd process whose JIT wrote its symbols
// (NODE_OPTIONS=--perf-basic-prof-only-functions: the shipped binary honours it), and
// saying where one thread's time went: in the kernel's send (and, within it, waking the
// client), its recv, V8's garbage collector, JavaScript (by the source module of the bundle
// each frame lies in, esbuild's `// src/…` comments), the event loop. Used by
// bench/profile.ts; pure functions, tested on hand-written samples (test/bench/perf-samples.test.ts).
import { basename } from 'node:path';

/** One sample: its thread, the time it stands for (ns of the thread's CPU; 0 when not printed) and its call chain, innermost frame first (symbols only). */
export interface Sample {
  tid: number;
  period: number;
  frames: string[];
}

/**
 * The samples in `perf script -F tid,period,ip,sym` text (the period may be left out): a line
 * with the thread id and the period, then one indented line per frame (address, symbol), a
 * blank line between samples.
 */
export function parsePerfScript(text: string): Sample[] {
  const out: Sample[] = [];
  let cur: Sample | null = null;
  for (const line of text.split('\n')) {
    if (line.trim() === '') {
      if (cur !== null) out.push(cur);
      cur = null;
      continue;
    }
    if (line.startsWith('\t')) {
      const frame = /^\t\s*[0-9a-f]+\s+(.*)$/.exec(line);
      if (frame !== null && cur !== null) {
        cur.frames.push(frame[1]!.trim());
        continue;
      }
    }
    // A header: perf pads the thread id, so it may be indented too.
    const head = /^\s*(\d+)(?:\s+(\d+))?\s*$/.exec(line);
    if (head !== null) {
      if (cur !== null) out.push(cur);
      cur = { tid: Number(head[1]), period: Number(head[2] ?? 0), frames: [] };
    }
  }
  if (cur !== null) out.push(cur);
  return out;
}

/** The thread with the most samples (the lookup thread, at saturation with one of them), and its count. */
export function busiestThread(samples: readonly Sample[]): { tid: number; samples: number } {
  const counts = new Map<number, number>();
  for (const s of samples) counts.set(s.tid, (counts.get(s.tid) ?? 0) + 1);
  let best = { tid: -1, samples: 0 };
  for (const [tid, n] of counts) if (n > best.samples) best = { tid, samples: n };
  return best;
}

/** A JS frame as V8 names it: `JS:*name file:line:col` (the tier mark and the name may be absent), or `JS:wasm-function[…]`. */
const JS_FRAME = /^JS:[~^+*]?(\S*) (.+):(\d+):(\d+)$/;

/** The bundle's modules by line: esbuild opens each with a `// src/…` (or `// node_modules/…`) comment line. */
export class BundleIndex {
  private readonly starts: number[] = [];
  private readonly names: string[] = [];
  private readonly lines: string[];

  constructor(
    /** Where the bundle was read from. */
    readonly path: string,
    text: string,
  ) {
    this.lines = text.split('\n');
    this.lines.forEach((l, i) => {
      const m = /^\/\/ ((?:src|tools|node_modules)\/\S+)$/.exec(l);
      if (m !== null) {
        this.starts.push(i + 1);
        this.names.push(m[1]!);
      }
    });
  }

  /**
   * Whether a JS frame's file is this bundle: the main thread's frames name the path it was
   * built at, which moves with the binary's build directory, so its file name is what must
   * agree; a lookup thread of the binary evaluates the embedded bundle (`[worker eval]`).
   * hasNameAt tells a stale bundle from the right one.
   */
  isBundle(file: string): boolean {
    return file === this.path || file === '[worker eval]' || basename(file) === basename(this.path);
  }

  /** The module holding 1-based `line`, or '' before the first. */
  moduleAt(line: number): string {
    let lo = 0;
    let hi = this.starts.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.starts[mid]! <= line) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found === -1 ? '' : this.names[found]!;
  }

  /**
   * Whether the bundle names `name` on `line` before `col` (1-based; V8 places a function at
   * its parameter list, after `name(`, `name = (` or `name: function (`): the frames come
   * from this very bundle.
   */
  hasNameAt(name: string, line: number, col: number): boolean {
    const l = this.lines[line - 1];
    return l !== undefined && l.slice(0, col - 1).includes(name);
  }
}

/** Where one frame's code lies: a module of the bundle, a Node built-in module, or null (not a JS frame with a source position). */
function jsModule(frame: string, bundle: BundleIndex | null): { module: string; fn: string; known: boolean | null } | null {
  const m = JS_FRAME.exec(frame);
  if (m === null) return null;
  const [, fn, file, line, col] = m;
  if (bundle !== null && bundle.isBundle(file!)) {
    // Anonymous functions and a module's own top level name no function at their position.
    const known = fn === '' || fn!.includes('/') ? null : bundle.hasNameAt(fn!, Number(line), Number(col));
    return { module: bundle.moduleAt(Number(line)) || '(bundle prelude)', fn: fn || '(anonymous)', known };
  }
  return { module: file!, fn: fn || '(anonymous)', known: null };
}

const isJs = (f: string) => f.startsWith('JS:');

const JAVASCRIPT = { label: 'JavaScript (the handlers and all they call)', test: (fr: readonly string[]) => fr.some(isJs) };

/** Where a sample is counted, the first rule its call chain matches. */
export const CATEGORIES: ReadonlyArray<{ label: string; test(frames: readonly string[]): boolean }> = [
  {
    label: 'kernel: send, waking the client',
    test: (fr) => fr.some(isSend) && fr.some((f) => f === 'sock_def_readable' || f === 'sock_def_wakeup'),
  },
  { label: 'kernel: send (the TCP path, to the peer on loopback)', test: (fr) => fr.some(isSend) },
  { label: 'kernel: recv', test: (fr) => fr.some((f) => f === '__libc_recv' || f === 'recv' || f === '__recv') },
  { label: "V8's garbage collector", test: (fr) => fr.some((f) => /Heap::CollectGarbage|Heap::PerformGarbageCollection|Scavenger|MinorGC|MarkCompact/.test(f)) },
  JAVASCRIPT,
  {
    label: "uWebSockets.js's bindings (strings and buffers across to V8, malloc)",
    test: (fr) => fr.some((f) => /Utf8Value|Utf8Length|WriteUtf8|WriteToFlat|SlowFlatten|NewFromUtf8|ArrayBuffer|HttpRequestWrapper|HttpResponseWrapper|GlobalHandles|malloc|^cfree|^free|memmove|memcpy/.test(f)),
  },
  { label: 'event loop and uWebSockets.js', test: (fr) => fr.some((f) => /epoll|uv_run|uv__|us_loop|us_internal|uWS::|uws_/.test(f)) },
  { label: 'other (no caller perf could name)', test: () => true },
];

function isSend(f: string): boolean {
  return f === '__send' || f === '__libc_send' || f === 'send' || f === '__sendmsg' || f === 'sendmsg';
}

export interface Share {
  label: string;
  samples: number;
}

export interface ThreadProfile {
  tid: number;
  samples: number;
  /** The thread's time the samples stand for (the sum of their periods), ns. */
  ns: number;
  /** Every sample of the thread in exactly one category (CATEGORIES' order). */
  categories: Share[];
  /**
   * JavaScript's samples by the source module of the innermost JS frame: its own code and
   * the builtins, WebAssembly and native code it calls (an Atomics builtin counts for the
   * module that called it). Largest first.
   */
  modules: Share[];
  /** The innermost frame's own samples (`module fn` for JS frames), largest first. */
  functions: Share[];
  /** Of the JS frames with a name and a position in the bundle, how many the bundle has there (1: the bundle given is the one that ran). */
  bundleAgreement: number;
}

/** Where thread `tid`'s samples went. */
export function profileThread(samples: readonly Sample[], tid: number, bundle: BundleIndex | null): ThreadProfile {
  const mine = samples.filter((s) => s.tid === tid);
  const cats = new Map<string, number>(CATEGORIES.map((c) => [c.label, 0]));
  const modules = new Map<string, number>();
  const functions = new Map<string, number>();
  let checked = 0;
  let agreed = 0;
  let ns = 0;
  const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
  for (const s of mine) {
    ns += s.period;
    const cat = CATEGORIES.find((c) => c.test(s.frames))!;
    bump(cats, cat.label);
    const leaf = s.frames[0] ?? '[no frames]';
    const leafJs = jsModule(leaf, bundle);
    bump(functions, leafJs === null ? leaf : `${leafJs.module} ${leafJs.fn}`);
    // One pass over the frames: the innermost JS frame's module, and whether each named frame stands in the bundle.
    let where: string | null = null;
    for (const f of s.frames) {
      const j = jsModule(f, bundle);
      if (j === null) continue;
      where ??= j.module;
      if (j.known === null) continue;
      checked++;
      if (j.known) agreed++;
    }
    if (cat === JAVASCRIPT) bump(modules, where ?? '(WebAssembly or builtins with no JS caller)');
  }
  const sorted = (m: Map<string, number>) => [...m].map(([label, n]) => ({ label, samples: n })).sort((a, b) => b.samples - a.samples);
  return {
    tid,
    samples: mine.length,
    ns,
    categories: [...cats].map(([label, n]) => ({ label, samples: n })),
    modules: sorted(modules),
    functions: sorted(functions),
    bundleAgreement: checked === 0 ? 1 : agreed / checked,
  };
}
