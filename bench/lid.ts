// Micro-benchmark of the lookup id (src/prebid/lid.ts): what making one costs the lookup
// path (budget: 1 µs), and what checking one costs the beacon. One thread, no I/O; CPU
// time per lid (the best of three rounds).
//   npm run bench:lid            (IVTD_BENCH_LID_N: lids per timed round, default 1e6)
import { randomBytes, randomUUID } from 'node:crypto';
import { LidCodec, emptyLidFacts, emptyLidInput } from '../src/prebid/lid.ts';

/** This thread's CPU time, ms: the figure a loaded machine (other processes) disturbs least. */
function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

const N = Number(process.env.IVTD_BENCH_LID_N ?? 1_000_000);
const codec = new LidCodec(randomBytes(16));
const x = emptyLidInput();
x.customerId = randomUUID();
x.band = 'medium';
x.ipNet = 0x12345678;
x.uaFamily = 0x1234;
x.device = 0x4321;
x.ipHi = 0xdeadbeef; x.ipLo = 0x01020304;
x.uidHi = 0xcafebabe; x.uidLo = 0x0badf00d;
x.tupleHi = 0x11111111; x.tupleLo = 0x22222222;

function makeRound(n: number): { ns: number; chars: number } {
  let chars = 0;
  const t0 = cpuMs();
  for (let i = 0; i < n; i++) {
    x.at = 1_760_000_000_000 + i;
    chars += codec.make(x).length;
  }
  return { ns: ((cpuMs() - t0) * 1e6) / n, chars };
}

const lids: string[] = [];
for (let i = 0; i < 1024; i++) {
  x.at = 1_760_000_000_000 + i;
  lids.push(codec.make(x));
}
const facts = emptyLidFacts();
function readRound(n: number): number {
  let bad = 0;
  const t0 = cpuMs();
  for (let i = 0; i < n; i++) if (codec.read(lids[i & 1023]!, facts) !== '') bad++;
  if (bad > 0) throw new Error(`${bad} genuine lids refused`);
  return ((cpuMs() - t0) * 1e6) / n;
}

makeRound(Math.min(N, 200_000)); // warm up
readRound(Math.min(N, 200_000));
const make = [makeRound(N), makeRound(N), makeRound(N)].map((r) => r.ns);
const read = [readRound(N), readRound(N), readRound(N)];
const best = (a: number[]) => Math.min(...a).toFixed(0);
console.log(JSON.stringify({ lidChars: lids[0]!.length, makeNsPerLid: best(make), readNsPerLid: best(read), rounds: { make: make.map((v) => +v.toFixed(0)), read: read.map((v) => +v.toFixed(0)) }, n: N }));
