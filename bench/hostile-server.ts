// Starting the ivtd the fuzz and hostile-client benchmarks drive: a binary (`--ivtd PATH`, else
// dist/ivtd when built) or a checkout through tsx (`--checkout DIR`, else this one), on
// ephemeral ports over a fresh data dir, with the first customer's credentials it announces.
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, startProcess, targetFromArgs, type IvtdTarget } from './processes.ts';

// ---- the server --------------------------------------------------------------------------
export interface Server {
  child: import('node:child_process').ChildProcess;
  pid: number;
  ports: { prebid: number; api: number; reporting: number; metrics: number };
  creds: { customer: string; partner: string; key: string; reporting: string; username: string; password: string };
  dataDir: string;
  /** The server's log lines since it was ready (stdout; at most the last 5 000). */
  log: string[];
}

export function chooseTarget(): IvtdTarget {
  const named = targetFromArgs(process.argv);
  if (named !== null) return named;
  const dist = join(ROOT, 'dist/ivtd');
  return existsSync(dist) ? { label: 'dist/ivtd', binary: dist } : { label: 'this checkout (tsx)', checkout: ROOT };
}

export async function startServer(target: IvtdTarget, threads: number, opts: { fdLimit?: number; dataDir?: string; args?: string[]; creds?: Server['creds'] } = {}): Promise<Server> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'ivtd-bench-'));
  const serveArgs = ['serve', '--data-dir', dataDir, '--prebid-port', '0', '--api-port', '0', '--reporting-port', '0', '--metrics-port', '0', '--threads', String(threads), ...(opts.args ?? [])];
  let [cmd, args, cwd] = target.binary
    ? [target.binary, serveArgs, tmpdir()]
    : [process.execPath, ['--import', 'tsx', '--import', './tools/ensure-generated.ts', 'src/cli/main.ts', ...serveArgs], target.checkout ?? ROOT];
  // A lower limit of open files (prlimit, util-linux), to run out of them on purpose.
  if (opts.fdLimit !== undefined) [cmd, args] = ['prlimit', [`--nofile=${opts.fdLimit}:${opts.fdLimit}`, cmd, ...args]];
  const field = (name: string) => new RegExp(`^ +${name} +(\\S+)$`, 'm');
  const ready = /"ports":\{"prebid":(\d+),"api":(\d+),"reporting":(\d+),"metrics":(\d+)[^}]*\},"msg":"ivtd ready"/;
  // A data dir used before announces no customer: its credentials are the caller's (opts.creds).
  const patterns = opts.creds ? [ready] : [ready, field('customer_id'), field('partner_id'), field('prebid_key'), field('reporting_key'), field('username'), field('password')];
  const { child, matches } = await startProcess(cmd, args, patterns, { cwd, env: { IVTD_LOG_LEVEL: 'info' } });
  const [p, customer, partner, key, reporting, username, password] = matches.map((m) => m);
  const log: string[] = [];
  let rest = '';
  child.stdout!.on('data', (d: Buffer) => {
    const lines = (rest + d.toString('utf8')).split('\n');
    rest = lines.pop()!;
    log.push(...lines);
    if (log.length > 5000) log.splice(0, log.length - 5000);
  });
  return {
    log,
    child,
    pid: child.pid!,
    ports: { prebid: Number(p![1]), api: Number(p![2]), reporting: Number(p![3]), metrics: Number(p![4]) },
    creds: opts.creds ?? { customer: customer![1]!, partner: partner![1]!, key: key![1]!, reporting: reporting![1]!, username: username![1]!, password: password![1]! },
    dataDir,
  };
}

