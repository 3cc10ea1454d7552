// `ivtd serve` as a real child process, the way an operator runs it: its output collected,
// a waiter on that output, and its exit. One place for the tests that need a whole process
// (signals, exit codes, start-up order), instead of a copy in each.
import { spawn, type ChildProcess } from 'node:child_process';
import { Agent, get } from 'node:http';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface ServeProcess {
  child: ChildProcess;
  /** Everything it printed so far (stdout and stderr). */
  out(): string;
  /** Resolves with the first match of `re` in the output from offset `from` on. */
  waitFor(re: RegExp, from?: number, ms?: number): Promise<RegExpExecArray>;
  /** Its exit code (null when a signal ended it). */
  exited: Promise<number | null>;
}

/**
 * Starts `ivtd serve ARGS` from this checkout. The test environment's IVTD_* variables are
 * left out (an operator's settings must not leak in), then `env` is added.
 */
export function startServe(args: string[], env: Record<string, string> = {}): ServeProcess {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('IVTD_')));
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'serve', ...args], {
    cwd: ROOT,
    env: { ...clean, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  /** Set once the process has ended and its output is all in ('close'). */
  let ended: string | null = null;
  const waiters: Array<() => void> = [];
  const onData = (d: Buffer) => {
    out += d.toString();
    for (const w of waiters.splice(0)) w();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const waitFor = (re: RegExp, from = 0, ms = 30_000) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${re}; output so far:\n${out}`)), ms);
      const check = () => {
        const m = re.exec(out.slice(from));
        if (m) {
          clearTimeout(timer);
          resolve(m);
        } else if (ended !== null) {
          // It will print nothing more: say so now, not after `ms`.
          clearTimeout(timer);
          reject(new Error(`${ended} without printing ${re}; its output:\n${out}`));
        } else waiters.push(check);
      };
      check();
    });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  child.once('close', (code, signal) => {
    ended = `ivtd serve ended (${signal ?? `exit ${code}`})`;
    for (const w of waiters.splice(0)) w();
  });
  return { child, out: () => out, waitFor, exited };
}

/** Status of GET /health-check on 127.0.0.1:port, or 0 when nothing accepts the connection. */
export function healthStatus(port: number, agent?: Agent): Promise<number> {
  return new Promise((resolve) => {
    const req = get({ host: '127.0.0.1', port, path: '/health-check', ...(agent ? { agent } : {}) }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
  });
}
