// The process limits glibc's malloc arenas itself (src/runtime/malloc-arenas.ts). The child
// (test/fixtures/runtime/malloc-arenas.ts) counts arenas with malloc_stats before and after
// six worker threads allocate: limited, the workers share the arenas there are; without the
// limit each gets its own (the figure the test could not fail without). The child runs as a
// bundle under plain node, as the binary runs: under tsx, its loader thread and compiles make
// more than 8 arenas first, and glibc fixes its limit for good once there are more than 8,
// which is why `ivtd serve` sets it first thing (src/cli/commands.ts).
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildSync } from 'esbuild';
import { limitMallocArenas, MALLOC_ARENAS } from '../../src/runtime/malloc-arenas.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'ivtd-arenas-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const child = join(dir, 'child.cjs');
const native = join(ROOT, 'src', 'runtime', 'native.ts');
buildSync({
  entryPoints: [join(ROOT, 'test', 'fixtures', 'runtime', 'malloc-arenas.ts')],
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  outfile: child,
  external: ['koffi'],
  // loadNative requires koffi from the checkout, as in the tests.
  define: {
    'import.meta.url': JSON.stringify(pathToFileURL(native).href),
    'import.meta.dirname': JSON.stringify(join(ROOT, 'src', 'runtime')),
    'import.meta.filename': JSON.stringify(native),
  },
  logLevel: 'warning',
});

/** Arenas malloc_stats reports in the child before and after its workers ran. */
function arenas(mode: 'limit' | 'none'): { before: number; after: number; limit: unknown } {
  const env = { ...process.env };
  delete env.MALLOC_ARENA_MAX;
  delete env.NODE_OPTIONS; // tap's loaders: a thread of their own, more arenas before the call
  const r = spawnSync(process.execPath, [child, mode], { env, encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`the child failed (${r.status}): ${r.stderr}`);
  const count = (marker: string) => {
    const from = r.stderr.indexOf(`--${marker}--`);
    const to = r.stderr.indexOf(`--end ${marker}--`);
    if (from < 0 || to < from) throw new Error(`no ${marker} report in: ${r.stderr.slice(0, 500)}`);
    return (r.stderr.slice(from, to).match(/^Arena \d+:/gm) ?? []).length;
  };
  return { before: count('before'), after: count('after'), limit: (JSON.parse(r.stdout.trim().split('\n').pop()!) as { limit: unknown }).limit };
}

t.test('limited at start, worker threads share the arenas there are', async (t) => {
  const r = arenas('limit');
  t.same(r.limit, { by: 'ivtd', arenas: MALLOC_ARENAS });
  // Arenas made before the call stay; none is made after it past the limit.
  t.ok(r.after <= Math.max(r.before, MALLOC_ARENAS), `${r.before} arenas at the call, ${r.after} after six threads allocated`);
});

t.test('without the limit each worker thread gets an arena of its own', async (t) => {
  const r = arenas('none');
  t.ok(r.after >= r.before + 4, `${r.before} arenas, then ${r.after}`);
});

t.test("an operator's MALLOC_ARENA_MAX wins, and nothing is called", async (t) => {
  t.same(limitMallocArenas({ MALLOC_ARENA_MAX: '4' }), { by: 'environment', arenas: '4' });
  t.not(limitMallocArenas({ MALLOC_ARENA_MAX: '' }).by, 'environment', 'an empty value is no setting');
});
