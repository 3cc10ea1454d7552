// Login latency (POST /login with the right password) of this checkout against a baseline
// build, both serving side by side, in alternating rounds from a client process of its own.
// A login is one scrypt check of the stored hash (src/store/secrets.ts SCRYPT) plus a session
// row: the figure that changes with the password-hashing cost. Reports p50/p99 of each and
// the ratio (the machine is shared; the ratio moves less than the figures).
//   node --import tsx bench/login.ts --baseline-checkout DIR [--rounds 5] [--logins 20]
//        [--checkout DIR | --ivtd PATH]
import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { ROOT, numArg, startIvtd, targetFromArgs, thisCheckout, type IvtdServer } from './processes.ts';

const ROUNDS = numArg('rounds', 5);
const LOGINS = numArg('logins', 20);

interface Creds {
  port: number;
  username: string;
  password: string;
}

/** Client mode: `--client` reads Creds and a count on stdin, logs in that many times one after another, prints the times (ms). */
async function client(): Promise<void> {
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  const { port, username, password, n } = JSON.parse(input) as Creds & { n: number };
  const body = new URLSearchParams({ username, password }).toString();
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = await fetch(`http://127.0.0.1:${port}/login`, { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    await r.text();
    if (r.status !== 200) throw new Error(`login answered ${r.status}`);
    ms.push(performance.now() - t0);
  }
  process.stdout.write(JSON.stringify(ms) + '\n');
}

function logins(creds: Creds, n: number): Promise<number[]> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/login.ts', '--client'], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stdin.end(JSON.stringify({ ...creds, n }));
  return new Promise((resolve, reject) => child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as number[]) : reject(new Error(`login client exited ${code}`)))));
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
};

async function main(): Promise<void> {
  const baseline = targetFromArgs(process.argv, 'baseline-');
  if (!baseline) throw new Error('give --baseline-checkout DIR or --baseline-ivtd PATH (the build to compare with)');
  const subjects = [
    { label: baseline.label, target: baseline, ms: [] as number[] },
    { label: 'this checkout', target: targetFromArgs(process.argv) ?? thisCheckout(), ms: [] as number[] },
  ];
  const servers: IvtdServer[] = [];
  try {
    for (const s of subjects) servers.push(await startIvtd(s.target, { threads: 1 }));
    const creds = servers.map((s) => ({ port: s.apiPort, username: s.username!, password: s.password! }));
    for (let i = 0; i < subjects.length; i++) await logins(creds[i]!, 2); // warm up
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate which goes first, so neither always meets the other's leftovers.
      const order = round % 2 === 0 ? [0, 1] : [1, 0];
      for (const i of order) subjects[i]!.ms.push(...(await logins(creds[i]!, LOGINS)));
    }
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
  }
  const [base, now] = subjects.map((s) => ({ label: s.label, n: s.ms.length, p50: quantile(s.ms, 0.5), p99: quantile(s.ms, 0.99) }));
  for (const s of [base!, now!]) console.log(`${s.label}: ${s.n} logins, p50 ${s.p50.toFixed(1)} ms, p99 ${s.p99.toFixed(1)} ms`);
  console.log(`ratio (this / baseline): p50 ${(now!.p50 / base!.p50).toFixed(2)}, p99 ${(now!.p99 / base!.p99).toFixed(2)}; load average ${loadavg()[0]!.toFixed(1)}`);
}

if (process.argv.includes('--client')) await client();
else await main();
