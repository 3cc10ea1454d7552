// A misspelt IVTD_* variable (IVTD_LOG_LEVL) was silently ignored: the operator believed a
// setting applied that did not. Every IVTD_* name that is not an option's is warned about,
// with the nearest option's name, except the few the project's own scripts and the
// dashboard's examples use for other things.
import { OPTIONS, envName, type OptionKey } from '../base/config.ts';

/** IVTD_* names that are not options but are in use: build.sh's, the benchmarks', the dashboard's curl examples. */
const NOT_OPTIONS = new Set(['IVTD_ENTRY', 'IVTD_OUT', 'IVTD_ROLES', 'IVTD_PREBID_KEY', 'IVTD_REPORTING_KEY']);
const NOT_OPTION_PREFIXES = ['IVTD_BENCH_'];

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const here = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = here;
    }
  }
  return row[b.length]!;
}

/** One warning per IVTD_* variable of `env` that names no option, with a suggestion when one is near. */
export function unknownEnvWarnings(env: NodeJS.ProcessEnv): string[] {
  const known = (Object.keys(OPTIONS) as OptionKey[]).map(envName);
  const out: string[] = [];
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith('IVTD_') || known.includes(name) || NOT_OPTIONS.has(name) || NOT_OPTION_PREFIXES.some((p) => name.startsWith(p))) continue;
    let best = '';
    let bestD = Infinity;
    for (const k of known) {
      const d = distance(name, k);
      if (d < bestD) [best, bestD] = [k, d];
    }
    // Near enough to be a slip of the keyboard: about one edit in three letters of the option's part.
    const hint = bestD <= Math.max(1, Math.floor((name.length - 5) / 3)) ? `; did you mean ${best}?` : ' (ivtd help lists the options; each is IVTD_ and the flag in capitals)';
    out.push(`warning: ${name} is not an ivtd setting and is ignored${hint}`);
  }
  return out;
}
