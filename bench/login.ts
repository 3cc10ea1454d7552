// Login latency (POST /login with the right password) of this checkout against a baseline
// build, both serving side by side, in alternating rounds from a client process of its own.
// A login is one scrypt check of the stored hash (src/base/secrets.ts SCRYPT) plus a session
// row: the figure that changes with the password-hashing cost. Reports p50/p99 of each and
// the ratio (the machine is shared; the ratio moves less than the figures).
//   node --import tsx bench/login.ts --baseline-checkout DIR [--rounds 5] [--logins 20]
//        [--checkout DIR | --ivtd PATH]
// With --flood N: the owner's logins under a wrong-password flood from N client addresses
// (127.2.<round>.1..N, loopback; half of the guesses name the owner's username, half others,
// and the flood ignores Retry-After). The owner logs in with the right password every
// --owner-every-ms from a clean address of its own (127.3.<round>.1) for --flood-seconds;
// reports the share of the owner's logins answered 200 (and their p50/p99) for each build.
//   node --import tsx bench/login.ts --baseline-checkout DIR --flood 20 [--rounds 2]
//        [--flood-seconds 15] [--flood-concurrency 2] [--flood-pause-ms 50] [--owner-every-ms 500]
import { spawn } from 'node:child_process';
import { request, Agent } from 'node:http';
import { loadavg } from 'node:os';
import { ROOT, numArg, sleep, startIvtd, targetFromArgs, thisCheckout, type IvtdServer } from './processes.ts';

const FLOOD = numArg('flood', 0);
const ROUNDS = numArg('rounds', FLOOD > 0 ? 2 : 5);
const LOGINS = numArg('logins', 20);
const FLOOD_SECONDS = numArg('flood-seconds', 15);
const FLOOD_CONCURRENCY = numArg('flood-concurrency', 2);
const FLOOD_PAUSE_MS = numArg('flood-pause-ms', 50);
const OWNER_EVERY_MS = numArg('owner-every-ms', 500);

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

/** Runs this file as a client process (`mode`), gives it `input` on stdin, resolves to what it prints. */
function clientProcess<T>(mode: '--client' | '--flood-client', input: object): Promise<T> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/login.ts', mode], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stdin.end(JSON.stringify(input));
  return new Promise((resolve, reject) => child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as T) : reject(new Error(`login client exited ${code}`)))));
}

const logins = (creds: Creds, n: number) => clientProcess<number[]>('--client', { ...creds, n });

interface FloodInput extends Creds {
  attackers: string[];
  owner: string;
  seconds: number;
  concurrency: number;
  pauseMs: number;
  ownerEveryMs: number;
}

interface FloodResult {
  /** Status of each of the owner's logins, and its time (ms). */
  owner: Array<{ status: number; ms: number }>;
  /** Answers to the flood, by status. */
  flood: Record<number, number>;
}

/** POST /login from `from`; resolves to the status (0: the connection failed). */
function loginFrom(port: number, from: string, agent: Agent, username: string, password: string): Promise<number> {
  const body = new URLSearchParams({ username, password }).toString();
  return new Promise((resolve) => {
    const req = request(
      { host: '127.0.0.1', port, path: '/login', method: 'POST', localAddress: from, agent, headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', () => resolve(0));
      },
    );
    req.on('error', () => resolve(0));
    req.end(body);
  });
}

/** Flood-client mode: the attackers' loops and the owner's logins, for `seconds`; prints a FloodResult. */
async function floodClient(): Promise<void> {
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  const f = JSON.parse(input) as FloodInput;
  const end = Date.now() + f.seconds * 1000;
  const flood: Record<number, number> = {};
  let guess = 0;
  const attacker = async (from: string, agent: Agent) => {
    while (Date.now() < end) {
      const n = guess++;
      const status = await loginFrom(f.port, from, agent, n % 2 === 0 ? f.username : `someone-${n % 97}`, `wrong-${n}`);
      flood[status] = (flood[status] ?? 0) + 1;
      if (f.pauseMs > 0) await sleep(f.pauseMs);
    }
  };
  const loops = f.attackers.flatMap((from) => {
    const agent = new Agent({ keepAlive: true, maxSockets: f.concurrency });
    return Array.from({ length: f.concurrency }, () => attacker(from, agent));
  });
  const owner: FloodResult['owner'] = [];
  const ownerAgent = new Agent({ keepAlive: true, maxSockets: 1 });
  await sleep(1000); // the flood first
  while (Date.now() < end) {
    const t0 = performance.now();
    const status = await loginFrom(f.port, f.owner, ownerAgent, f.username, f.password);
    const ms = performance.now() - t0;
    owner.push({ status, ms });
    await sleep(Math.max(0, f.ownerEveryMs - ms));
  }
  await Promise.all(loops);
  process.stdout.write(JSON.stringify({ owner, flood } satisfies FloodResult) + '\n');
  process.exit(0); // keep-alive sockets would hold the process
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
};

/** --flood: the owner's share of successful logins under a wrong-password flood, per build. */
async function floodMain(): Promise<void> {
  const baseline = targetFromArgs(process.argv, 'baseline-');
  if (!baseline) throw new Error('give --baseline-checkout DIR or --baseline-ivtd PATH (the build to compare with)');
  const subjects = [
    { label: baseline.label, target: baseline, owner: [] as FloodResult['owner'], flood: {} as Record<number, number> },
    { label: 'this checkout', target: targetFromArgs(process.argv) ?? thisCheckout(), owner: [] as FloodResult['owner'], flood: {} as Record<number, number> },
  ];
  const servers: IvtdServer[] = [];
  try {
    for (const s of subjects) servers.push(await startIvtd(s.target, { threads: 1 }));
    for (let round = 0; round < ROUNDS; round++) {
      // Fresh addresses each round (locks from the last round stay with the old ones).
      const attackers = Array.from({ length: FLOOD }, (_, i) => `127.2.${round}.${i + 1}`);
      const owner = `127.3.${round}.1`;
      const order = round % 2 === 0 ? [0, 1] : [1, 0];
      for (const i of order) {
        const srv = servers[i]!;
        const r = await clientProcess<FloodResult>('--flood-client', {
          port: srv.apiPort, username: srv.username!, password: srv.password!, attackers, owner,
          seconds: FLOOD_SECONDS, concurrency: FLOOD_CONCURRENCY, pauseMs: FLOOD_PAUSE_MS, ownerEveryMs: OWNER_EVERY_MS,
        } satisfies FloodInput);
        const s = subjects[i]!;
        s.owner.push(...r.owner);
        for (const [k, v] of Object.entries(r.flood)) s.flood[Number(k)] = (s.flood[Number(k)] ?? 0) + v;
      }
    }
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
  }
  const shares = subjects.map((s) => {
    const ok = s.owner.filter((o) => o.status === 200);
    const ms = ok.map((o) => o.ms);
    const statuses = s.owner.reduce<Record<number, number>>((m, o) => ({ ...m, [o.status]: (m[o.status] ?? 0) + 1 }), {});
    const share = s.owner.length > 0 ? ok.length / s.owner.length : 0;
    const lat = ms.length > 0 ? `, p50 ${quantile(ms, 0.5).toFixed(0)} ms, p99 ${quantile(ms, 0.99).toFixed(0)} ms` : '';
    console.log(`${s.label}: owner ${ok.length}/${s.owner.length} logins succeeded (${(100 * share).toFixed(1)} %; ${JSON.stringify(statuses)})${lat}; flood answers ${JSON.stringify(s.flood)}`);
    return share;
  });
  const [b, n] = shares as [number, number];
  console.log(`owner's success under a ${FLOOD}-address flood: baseline ${(100 * b).toFixed(1)} %, this ${(100 * n).toFixed(1)} %, ratio (this / baseline) ${b > 0 ? (n / b).toFixed(2) : 'inf'}; load average ${loadavg()[0]!.toFixed(1)}`);
}

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
else if (process.argv.includes('--flood-client')) await floodClient();
else if (FLOOD > 0) await floodMain();
else await main();
