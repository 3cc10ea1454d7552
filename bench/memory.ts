// Where a server's memory goes under the flood: the figures behind docs/memory.md and the
// budget's V8-heap floor (src/memory/budget.ts). One server (`--ivtd PATH`, default
// dist/ivtd; or `--checkout DIR`), `--threads 2`, the flood of bench/flood.ts (a new IP,
// uid and IFA on every request) for `--seconds` (40); at start-up and near the flood's end it
// prints VmRSS/VmHWM, the resident memory by mapping (/proc/PID/smaps: the binary's and the
// libraries' file-backed pages, the anonymous mappings by size: V8's 256 KB heap pages, the
// shared tables, DuckDB's pool), and the heap and budget gauges of /metrics.
//   node --import tsx bench/memory.ts [--ivtd dist/ivtd | --checkout DIR] [--seconds 40] [--args "--memory-budget 512"]
import { readFileSync } from 'node:fs';
import { floodScript } from './flood-script.ts';
import { numArg, sleep, startIvtd, strArg, targetFromArgs, ROOT } from './processes.ts';
import { generateUas } from './ua-gen.ts';
import { wrkAsync, wrkAvailable } from './wrk.ts';
import { join } from 'node:path';

const SECONDS = numArg('seconds', 40);
const EXTRA = strArg('args', '').split(' ').filter(Boolean);
const MB = 1024; // smaps counts kB

interface Mapping {
  name: string;
  sizeKb: number;
  rssKb: number;
}

function mappings(pid: number): Mapping[] {
  const out: Mapping[] = [];
  let cur: Mapping | null = null;
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      cur = { name: head[1] || '[anon]', sizeKb: 0, rssKb: 0 };
      out.push(cur);
      continue;
    }
    if (cur === null) continue;
    const size = /^Size:\s+(\d+) kB/.exec(line);
    if (size) cur.sizeKb = Number(size[1]);
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) cur.rssKb = Number(rss[1]);
  }
  return out;
}

/** Resident MB by file, and the anonymous mappings grouped by size. */
function describe(pid: number): string[] {
  const maps = mappings(pid);
  const files = new Map<string, number>();
  const anon = new Map<number, { n: number; rssKb: number }>();
  for (const m of maps) {
    if (m.name === '[anon]') {
      const a = anon.get(m.sizeKb) ?? { n: 0, rssKb: 0 };
      a.n++;
      a.rssKb += m.rssKb;
      anon.set(m.sizeKb, a);
    } else files.set(m.name, (files.get(m.name) ?? 0) + m.rssKb);
  }
  const lines = [...files].filter(([, kb]) => kb >= MB).sort((a, b) => b[1] - a[1]).map(([name, kb]) => `  ${(kb / MB).toFixed(0).padStart(4)} MB  ${name}`);
  lines.push('  anonymous mappings by size (those with 1 MB resident or more):');
  for (const [sizeKb, a] of [...anon].sort((x, y) => y[1].rssKb - x[1].rssKb)) {
    if (a.rssKb < MB) continue;
    const what = sizeKb === 256 ? ' (V8 heap pages)' : '';
    lines.push(`  ${(a.rssKb / MB).toFixed(0).padStart(4)} MB  ${a.n} x ${(sizeKb / MB).toFixed(2)} MB${what}`);
  }
  return lines;
}

function status(pid: number): string {
  return (readFileSync(`/proc/${pid}/status`, 'utf8').match(/^(VmRSS|VmHWM):\s+\d+ kB/gm) ?? []).join(', ');
}

async function gauges(port: number): Promise<string[]> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const wanted = /^(process_resident_memory_bytes|nodejs_heap_size_(total|used)_bytes|nodejs_heap_space_size_total_bytes\{space="(new|old|large_object)"\}|nodejs_external_memory_bytes|ivtd_lookup_thread_heap_bytes|ivtd_memory_budget_bytes)/;
  return text
    .split('\n')
    .filter((l) => wanted.test(l))
    .map((l) => `  ${l.replace(/ ([\d.e+]+)$/, (_, n: string) => ` ${(Number(n) / 1048576).toFixed(1)} MB`)}`);
}

async function main(): Promise<void> {
  if (!wrkAvailable()) throw new Error('bench/memory.ts needs wrk (apt-get install wrk)');
  const target = targetFromArgs(process.argv) ?? { label: 'dist/ivtd', binary: join(ROOT, 'dist/ivtd') };
  const ivtd = await startIvtd(target, { threads: 2, args: EXTRA });
  try {
    console.log(`${target.label}, --threads 2 ${EXTRA.join(' ')}`);
    console.log(`start-up: ${status(ivtd.pid)}`);
    console.log(describe(ivtd.pid).join('\n'));
    const run = wrkAsync({ port: ivtd.prebidPort, script: floodScript('flood', generateUas(20_000), ivtd), connections: 32, seconds: SECONDS });
    await sleep(Math.max(1, SECONDS - 3) * 1000);
    console.log(`flood, ${SECONDS - 3} s in: ${status(ivtd.pid)}`);
    console.log(describe(ivtd.pid).join('\n'));
    console.log((await gauges(ivtd.metricsPort)).join('\n'));
    const r = await run;
    console.log(`flood: ${Math.round(r.rps)} lookups/s, non-2xx ${r.non2xx}, errors ${r.errors}; after it: ${status(ivtd.pid)}`);
  } finally {
    await ivtd.stop();
  }
}

await main();
