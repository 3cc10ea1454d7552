// The property and differential tests (test/**/*-properties.test.ts, fast-check) at a larger
// size than `npm test` runs them, under a fresh seed (printed; give it back to repeat a run).
//   node --import tsx bench/properties.ts [--scale 50] [--seed N] [--jobs 1]
// `--scale`: each property's case count × this (npm test runs × 1: a few thousand each).
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { numArg, ROOT } from './processes.ts';

const scale = numArg('scale', 50);
const seed = numArg('seed', (Math.random() * 0x7fffffff) | 0);
const jobs = numArg('jobs', 1);

function find(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : find(p);
    return e.name.endsWith('-properties.test.ts') ? [relative(ROOT, p)] : [];
  });
}

const files = find(join(ROOT, 'test')).sort();
console.log(JSON.stringify({ files, scale, seed, repeat: `node --import tsx bench/properties.ts --scale ${scale} --seed ${seed}` }));
const t0 = Date.now();
const r = spawnSync(join(ROOT, 'node_modules/.bin/tap'), ['--jobs', String(jobs), '--reporter', 'terse', ...files], {
  cwd: ROOT,
  stdio: 'inherit',
  env: { ...process.env, IVTD_PROP_SCALE: String(scale), IVTD_PROP_SEED: String(seed) },
});
console.log(JSON.stringify({ ok: r.status === 0, seconds: Math.round((Date.now() - t0) / 1000), seed, scale }));
process.exit(r.status ?? 1);
