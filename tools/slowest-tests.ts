// Prints the slowest test files of the last `tap` run (npm test runs it at the end): where
// the suite's time goes, per file, from tap's saved results (.tap/test-results/**/*.tap,
// whose last `# time=` line is the file's wall time).
//   node --import tsx tools/slowest-tests.ts [N]
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const ROOT = '.tap/test-results';

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    return e.isDirectory() ? files(p) : e.name.endsWith('.tap') ? [p] : [];
  });
}

/** The file's wall time in ms: the last top-level `# time=` line of its TAP output. */
export function fileTimeMs(tap: string): number | null {
  const all = [...tap.matchAll(/^# time=([\d.]+)ms$/gm)];
  return all.length ? Number(all[all.length - 1]![1]) : null;
}

function main(): void {
  const n = Number(process.argv[2] ?? 10);
  if (!existsSync(ROOT)) {
    process.stderr.write(`no ${ROOT}: run the tests first\n`);
    process.exitCode = 1;
    return;
  }
  const since = Date.now() - 6 * 3600_000; // this run's files, not an older run's leftovers
  const times = files(ROOT)
    .filter((p) => statSync(p).mtimeMs >= since)
    .map((p) => ({ file: relative(ROOT, p).replace(/\.tap$/, ''), ms: fileTimeMs(readFileSync(p, 'utf8')) }))
    .filter((x): x is { file: string; ms: number } => x.ms !== null)
    .sort((a, b) => b.ms - a.ms);
  const total = times.reduce((a, b) => a + b.ms, 0);
  const lines = times.slice(0, n).map((x) => `  ${(x.ms / 1000).toFixed(1).padStart(6)} s  ${x.file}`);
  process.stdout.write(`\nslowest test files (of ${times.length}, ${(total / 1000).toFixed(0)} s summed over files; tap runs them in parallel):\n${lines.join('\n')}\n`);
}

if (import.meta.url === `file://${process.argv[1]}`) main();
