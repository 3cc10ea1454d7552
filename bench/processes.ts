// The servers a benchmark drives, each a process of its own (so the client's clock shares
// no event loop with them): an ivtd server — from this checkout, from another checkout
// (`--checkout DIR`, e.g. a worktree of the commit a change started from) or from a built
// binary (`--ivtd PATH`) — and the bare uWebSockets.js baseline (bench/bare-server.ts).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const ROOT = join(import.meta.dirname, '..');

/** Which ivtd to start: a checkout (run through tsx) or a built binary. */
export interface IvtdTarget {
  label: string;
  checkout?: string;
  binary?: string;
}

/** `--ivtd PATH` or `--checkout DIR` (prefixed, e.g. `--baseline-ivtd`), else null. */
export function targetFromArgs(argv: string[], prefix = ''): IvtdTarget | null {
  const value = (name: string) => {
    const i = argv.indexOf(`--${prefix}${name}`);
    return i > 0 ? argv[i + 1] : undefined;
  };
  const binary = value('ivtd');
  const checkout = value('checkout');
  if (binary && checkout) throw new Error(`give --${prefix}ivtd or --${prefix}checkout, not both`);
  if (binary) return { label: binary, binary: resolve(binary) };
  if (checkout) return { label: checkout, checkout: resolve(checkout) };
  return null;
}

export const thisCheckout = (root = ROOT): IvtdTarget => ({ label: 'this checkout', checkout: root });

/** Newest modification time (ms) of the files under dir. */
function newestMtime(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, e.name);
    if (e.isDirectory()) newest = Math.max(newest, newestMtime(path));
    else if (e.isFile()) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

/**
 * The build to measure when the command names none (`--ivtd`, `--checkout`): this checkout
 * through tsx, or, beside a baseline binary (`--baseline-ivtd`), this checkout's binary
 * (dist/ivtd): both sides of a comparison the same kind of build, since a binary and the same
 * code through tsx differ by more than most changes do. Refuses a dist/ivtd that is missing
 * or older than a file under src/ (it would measure other code than the checkout's).
 */
export function defaultTarget(baseline: IvtdTarget | null, root = ROOT): IvtdTarget {
  if (baseline?.binary === undefined) return thisCheckout(root);
  const binary = join(root, 'dist/ivtd');
  const name = '--ivtd PATH (or --checkout DIR to measure through tsx)';
  if (!existsSync(binary)) throw new Error(`the baseline is a binary and dist/ivtd is not built: run npm run build, or name the build with ${name}`);
  if (newestMtime(join(root, 'src')) > statSync(binary).mtimeMs) {
    throw new Error(`dist/ivtd is older than the sources under src/: rebuild it (npm run build), or name the build with ${name}`);
  }
  return { label: 'dist/ivtd', binary };
}

/** How long a server may take to start: 30 s, or IVTD_BENCH_START_MS (a busy host: the bench smoke test). */
const START_MS = Number(process.env.IVTD_BENCH_START_MS) || 30_000;

/** Starts a process and resolves when its stdout matches every pattern (START_MS at most). */
export function startProcess(
  command: string,
  args: string[],
  patterns: RegExp[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<{ child: ChildProcess; matches: RegExpExecArray[] }> {
  const child = spawn(command, args, { cwd: opts.cwd ?? ROOT, env: { ...process.env, ...opts.env }, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${command} ${args.join(' ')} did not start within ${START_MS / 1000} s:\n${out}`));
    }, START_MS);
    const onData = (d: Buffer) => {
      out += d.toString();
      const matches = patterns.map((p) => p.exec(out));
      if (matches.every((m) => m !== null)) {
        clearTimeout(timer);
        child.stdout!.off('data', onData);
        child.stdout!.resume(); // keep draining: a full pipe would block the server's logging
        child.off('exit', onExit);
        resolve({ child, matches: matches as RegExpExecArray[] });
      }
    };
    const onExit = (code: number | null) => {
      clearTimeout(timer);
      reject(new Error(`${command} ${args.join(' ')} exited with ${code}:\n${out}`));
    };
    child.stdout!.on('data', onData);
    child.once('exit', onExit);
  });
}

/** SIGTERM, then the exit code (SIGKILL after 20 s). */
export async function stopProcess(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  child.kill('SIGTERM');
  const hard = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const code = await exited;
  clearTimeout(hard);
  return code;
}

export interface IvtdServer {
  child: ChildProcess;
  pid: number;
  prebidPort: number;
  apiPort: number;
  reportingPort: number;
  /** Where GET /metrics is: --metrics-port, or the account API port for builds older than that flag. */
  metricsPort: number;
  partnerId: string;
  key: string;
  /** The data dir (its control socket takes provisioning commands, e.g. a policy). */
  dataDir: string;
  /** The first customer's user (fresh data dirs only). */
  username?: string;
  password?: string;
  stop(): Promise<number | null>;
}

/**
 * Starts `ivtd serve` on ephemeral ports over a fresh temp data dir and waits for the
 * first customer's credentials and the ready line (which follows every listener).
 */
export async function startIvtd(
  target: IvtdTarget,
  opts: {
    threads: number;
    args?: string[];
    env?: NodeJS.ProcessEnv;
    /** Node flags (checkouts only), e.g. --trace-gc. */
    nodeArgs?: string[];
    /** An existing data dir (kept on stop) and the credentials of a customer in it; else a fresh temp dir and its first customer. */
    existing?: { dataDir: string; partnerId: string; key: string };
  },
): Promise<IvtdServer> {
  const dataDir = opts.existing?.dataDir ?? mkdtempSync(join(tmpdir(), 'ivtd-bench-'));
  const removeDataDir = () => {
    if (!opts.existing) rmSync(dataDir, { recursive: true, force: true });
  };
  const metricsArgs = hasMetricsPort(target) ? ['--metrics-port', '0'] : [];
  const serveArgs = ['serve', '--data-dir', dataDir, '--prebid-port', '0', '--api-port', '0', '--reporting-port', '0', ...metricsArgs, '--threads', String(opts.threads), ...(opts.args ?? [])];
  const [command, args, cwd] = target.binary
    ? [target.binary, serveArgs, tmpdir()]
    : [process.execPath, [...(opts.nodeArgs ?? []), '--import', 'tsx', 'src/cli/main.ts', ...serveArgs], target.checkout ?? ROOT];
  try {
    const ready = /"ports":\{"prebid":(\d+),"api":(\d+)(?:,"reporting":(\d+))?(?:,"metrics":(\d+))?[^}]*\},"msg":"ivtd ready"/;
    const patterns = opts.existing ? [ready] : [ready, /partner_id +([0-9a-f-]{36})/, /prebid_key +(\S+)/, /^ +username +(\S+)$/m, /^ +password +(\S+)$/m];
    const { child, matches } = await startProcess(command, args, patterns, { cwd, env: { IVTD_LOG_LEVEL: 'info', ...opts.env } });
    const [ports, partner, key, username, password] = matches;
    return {
      child,
      pid: child.pid!,
      prebidPort: Number(ports![1]),
      apiPort: Number(ports![2]),
      reportingPort: Number(ports![3] ?? NaN),
      metricsPort: Number(ports![4] ?? ports![2]),
      partnerId: opts.existing?.partnerId ?? partner![1]!,
      key: opts.existing?.key ?? key![1]!,
      dataDir,
      username: username?.[1],
      password: password?.[1],
      async stop() {
        const code = await stopProcess(child);
        removeDataDir();
        return code;
      },
    };
  } catch (e) {
    removeDataDir();
    throw e;
  }
}

/** The bare uWS handler answering every request with a fixed body of `bytes` bytes. */
export async function startBare(bytes: number): Promise<{ port: number; stop(): Promise<number | null> }> {
  const { child, matches } = await startProcess(process.execPath, ['--import', 'tsx', 'bench/bare-server.ts', String(bytes)], [/\{"port":(\d+)\}/]);
  return { port: Number(matches[0]![1]), stop: () => stopProcess(child) };
}

/** Resident set size of a process in MB (VmRSS), or NaN once it is gone. */
export function rssMb(pid: number): number {
  return statusMb(pid, 'VmRSS');
}

/** The most resident memory a process has had so far in MB (VmHWM: the peak between samples too), or NaN. */
export function peakRssMb(pid: number): number {
  return statusMb(pid, 'VmHWM');
}

function statusMb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : NaN;
  } catch {
    return NaN;
  }
}

/** Builds from before --metrics-port served /metrics on the account API port and refuse the flag. */
function hasMetricsPort(target: IvtdTarget): boolean {
  if (target.binary) return spawnSync(target.binary, ['--help'], { encoding: 'utf8' }).stdout.includes('--metrics-port');
  // The options moved to src/base/config.ts (issue 57); older checkouts have src/config.ts.
  const root = target.checkout ?? ROOT;
  const file = existsSync(join(root, 'src/base/config.ts')) ? 'src/base/config.ts' : 'src/config.ts';
  return readFileSync(join(root, file), 'utf8').includes("flag: 'metrics-port'");
}

/** Cumulative buckets of the in-thread lookup histogram on /metrics (le → count); empty when absent. */
export async function inThreadBuckets(metricsPort: number): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^ivtd_lookup_duration_seconds_bucket\{le="([^"]+)"\} (\d+)/gm)) out.set(m[1]!, Number(m[2]));
  return out;
}

export interface InThreadLatency {
  lookups: number;
  p50: string;
  p99: string;
  p999: string;
  /** p99's bucket upper bound in µs (Infinity past the last bucket, NaN without data). */
  p99_us: number;
}

/** Quantiles (as bucket upper bounds) of the lookups counted between two scrapes. */
export function inThreadLatency(before: Map<string, number>, after: Map<string, number>): InThreadLatency {
  const les = [...after.keys()];
  const delta = les.map((le) => (after.get(le) ?? 0) - (before.get(le) ?? 0));
  const total = delta.at(-1) ?? 0;
  const lastFinite = les.length > 1 ? Math.round(Number(les.at(-2)) * 1e6) : NaN;
  const bound = (p: number) => {
    const i = delta.findIndex((c) => c >= p * total && c > 0);
    return i < 0 ? NaN : les[i] === '+Inf' ? Infinity : Math.round(Number(les[i]) * 1e6);
  };
  const label = (us: number) => (Number.isNaN(us) ? 'n/a' : us === Infinity ? `> ${lastFinite} us` : `<= ${us} us`);
  return { lookups: total, p50: label(bound(0.5)), p99: label(bound(0.99)), p999: label(bound(0.999)), p99_us: bound(0.99) };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `--name VALUE` from argv, else the default. */
export function strArg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] !== undefined ? process.argv[i + 1]! : def;
}

/** `--name N` from argv, else the default. */
export function numArg(name: string, def: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return def;
  const v = Number(process.argv[i + 1]);
  if (!Number.isFinite(v)) throw new Error(`--${name} needs a number, got ${process.argv[i + 1]}`);
  return v;
}
