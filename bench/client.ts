// A Node load client as a process of its own, so that its clock shares no event loop (and
// no CPU-starved process) with the server it measures. Reads one JSON ClientRequest on
// stdin (a path list is too long for argv); prints one JSON line with the result.
//   echo '{"kind":"paced","port":9898,"paths":["/x"],"rate":2000,"seconds":8,"connections":16}' | node --import tsx bench/client.ts
import autocannon from 'autocannon';
import { spawn } from 'node:child_process';
import { ROOT } from './processes.ts';
import { paced, type PacedResult } from './paced.ts';

export interface ClientRequest {
  kind: 'paced' | 'autocannon';
  port: number;
  paths: string[];
  rate: number;
  seconds: number;
  connections: number;
  /** POST these bodies (JSON, in turn) to the paths instead of GETs. */
  bodies?: string[];
  /** The POSTs' Content-Type (default application/json). */
  contentType?: string;
}

export interface AutocannonResult {
  rps: number;
  /** autocannon records whole milliseconds. */
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  non2xx: number;
  /** The client process's own CPU (user + system) over the run, ms: what the load itself cost. */
  clientCpuMs: number;
}

async function runAutocannon(req: ClientRequest): Promise<AutocannonResult> {
  const cpu0 = process.cpuUsage();
  const r = await autocannon({
    url: `http://127.0.0.1:${req.port}`,
    connections: req.connections,
    ...(req.rate > 0 ? { overallRate: req.rate } : {}),
    duration: req.seconds,
    requests: req.bodies
      ? req.bodies.map((body, i) => ({ method: 'POST' as const, path: req.paths[i % req.paths.length]!, body, headers: { 'content-type': req.contentType ?? 'application/json' } }))
      : req.paths.map((path) => ({ method: 'GET' as const, path })),
  });
  const cpu = process.cpuUsage(cpu0);
  return { rps: Math.round(r.requests.total / req.seconds), p50Ms: r.latency.p50, p99Ms: r.latency.p99, maxMs: r.latency.max, non2xx: r.non2xx, clientCpuMs: Math.round((cpu.user + cpu.system) / 1000) };
}

/** Runs one client request in a child process and returns its result. */
export function runClient(req: ClientRequest & { kind: 'paced' }): Promise<PacedResult>;
export function runClient(req: ClientRequest & { kind: 'autocannon' }): Promise<AutocannonResult>;
export function runClient(req: ClientRequest): Promise<PacedResult | AutocannonResult> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/client.ts'], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
  child.stdin.end(JSON.stringify(req));
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code) => {
      const line = out.trim().split('\n').at(-1) ?? '';
      if (code !== 0 || !line.startsWith('{')) reject(new Error(`bench/client.ts exited with ${code}: ${out}`));
      else resolve(JSON.parse(line) as PacedResult | AutocannonResult);
    });
  });
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  let input = '';
  for await (const chunk of process.stdin) input += (chunk as Buffer).toString();
  const req = JSON.parse(input) as ClientRequest;
  const result = req.kind === 'autocannon' ? await runAutocannon(req) : await paced(req);
  process.stdout.write(JSON.stringify(result) + '\n');
}
