// Property and differential tests (fast-check), seeded and reproducible. `npm test` runs each
// property at its stated size with a fixed seed, so a run is the same run everywhere; the
// benchmark (`npm run bench:props`) runs them again many times larger with a fresh seed.
//   IVTD_PROP_SEED=<n>   the seed (printed by every property; a failure also prints its path)
//   IVTD_PROP_SCALE=<x>  runs × x (bench:props sets 50)
//   IVTD_PROP_PATH=<p>   replays one failing case (the path fast-check printed) with its seed
import fc from 'fast-check';

/** The seed of this run: IVTD_PROP_SEED, else a fixed one (npm test is the same run each time). */
export const PROPERTY_SEED = process.env.IVTD_PROP_SEED !== undefined ? Number(process.env.IVTD_PROP_SEED) | 0 : 0x1f5eed;
const SCALE = process.env.IVTD_PROP_SCALE !== undefined ? Math.max(0.01, Number(process.env.IVTD_PROP_SCALE)) : 1;
const PATH = process.env.IVTD_PROP_PATH;

interface Tap {
  comment(...m: unknown[]): void;
  fail(message: string): void;
  pass(message: string): void;
}

/**
 * Runs `property` `runs` times (× IVTD_PROP_SCALE) under the run's seed; a counterexample
 * fails `t` with fast-check's report (the shrunk case, the seed and the path replaying it).
 * Each property gets its own seed derived from the run's and its name, so adding one does
 * not change the cases the others draw.
 */
export function checkProperty(t: Tap, name: string, property: fc.IRawProperty<unknown[]>, runs: number): void {
  const numRuns = Math.max(1, Math.round(runs * SCALE));
  const seed = (PROPERTY_SEED ^ nameHash(name)) | 0;
  t.comment(`${name}: ${numRuns} cases, seed ${seed} (IVTD_PROP_SEED=${PROPERTY_SEED} repeats the run)`);
  try {
    fc.assert(property, PATH !== undefined ? { seed, numRuns, path: PATH, includeErrorInReport: true } : { seed, numRuns, includeErrorInReport: true });
    t.pass(`${name}: ${numRuns} cases`);
  } catch (e) {
    t.fail(`${name}: ${(e as Error).message}`);
  }
}

function nameHash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
