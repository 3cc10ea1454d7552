// The control socket: a running server owns the DuckDB file (one process per file), so
// the CLI sends provisioning commands here instead of opening the store itself.
// Protocol: one JSON object per line, {id, cmd, args} → {id, ok: true, result} |
// {id, ok: false, error: {code, message}}, any number of requests per connection.
import { closeSync, lstatSync, mkdirSync, openSync, statSync, unlinkSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import type { Store } from '../store/db.ts';
import { STORE_ERROR_CODES, StoreError, type StoreErrorCode } from '../store/store-error.ts';
import { log } from '../base/log.ts';
import { quoted } from '../base/text.ts';
import { DOCUMENT_LIMITS, jsonFault, type JsonValue } from '../base/bounded-json.ts';
import type { PolicyService } from '../policy/service.ts';
import { isOperationName, runOperation, type OperationHooks, type OperationName, type OperationResult, type ReloadOutcome } from './operations.ts';

export const CONTROL_SOCKET_FILE = 'ivtd.sock';
/** One request line; a whole policy (`ivtd policy set`, up to 100 000 entries) fits. */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;
/** A connection idle this long (no traffic, no request in progress) is dropped, so a stuck client cannot hold a descriptor forever. */
export const CONNECTION_IDLE_MS = 30_000;
/** Requests one connection may have waiting for their answers (the CLI sends one per connection). */
export const MAX_PENDING_REQUESTS = 64;
/** Bytes held for unanswered requests over all connections: four whole-policy lines at once. */
export const MAX_BUFFERED_BYTES = 4 * MAX_LINE_BYTES;
const CLIENT_TIMEOUT_MS = 30_000;
/**
 * Control connections served at once. The CLI opens one per command; past this, a
 * connection is answered one error line and closed, so idle connections cannot take
 * every file descriptor the server has (and with them the bid and account ports).
 */
export const MAX_CONNECTIONS = 32;
/** A refused connection is logged at most this often, not once per connection of a flood. */
const REFUSAL_LOG_INTERVAL_MS = 60_000;
/** Umask while binding the control socket: the file is created mode 0600. */
const SOCKET_UMASK = 0o177;
// sun_path holds 108 bytes including the terminating NUL; longer paths are silently truncated.
const SUN_PATH_MAX = 107;

export type ControlErrorCode = StoreErrorCode | 'bad_request' | 'unknown_command' | 'too_large' | 'internal' | 'timeout' | 'closed' | 'busy';

/** A failure reported by (or talking to) the control server that is not a StoreError. */
export class ControlError extends Error {
  constructor(
    readonly code: ControlErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'ControlError';
  }
}

/** No server is listening on the data dir's control socket (absent or stale socket file). */
export class ControlUnavailableError extends Error {
  readonly code = 'no_server';
  constructor(readonly socketPath: string) {
    super(`no ivtd server is listening on ${socketPath}`);
    this.name = 'ControlUnavailableError';
  }
}

export function controlSocketPath(dataDir: string): string {
  return join(dataDir, CONTROL_SOCKET_FILE);
}

/**
 * The address to bind or dial. A deep data dir would exceed sun_path, so then the
 * directory is opened and reached through /proc/self/fd/N (Linux); `release` closes it
 * once the socket no longer needs the name.
 */
function socketAddress(dataDir: string): { address: string; release(): void } {
  const path = controlSocketPath(dataDir);
  if (Buffer.byteLength(path) <= SUN_PATH_MAX) return { address: path, release() {} };
  const fd = openSync(dataDir, 'r');
  let open = true;
  return {
    address: `/proc/self/fd/${fd}/${CONTROL_SOCKET_FILE}`,
    release() {
      if (open) closeSync(fd);
      open = false;
    },
  };
}

function isNoServer(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ECONNREFUSED';
}

interface Response {
  id: unknown;
  ok: boolean;
  result?: unknown;
  error?: { code: ControlErrorCode; message: string };
}

function errorResponse(id: unknown, code: ControlErrorCode, message: string): Response {
  return { id, ok: false, error: { code, message } };
}

/** Runs hooks after the operation committed; a failing hook is logged, not reported as a failed command. */
function safeHooks(opts: ControlServerOptions): OperationHooks {
  return {
    keysChanged() {
      try {
        opts.onKeysChanged();
      } catch (e) {
        log.error({ err: e }, 'control: onKeysChanged failed');
      }
    },
    async reloadData() {
      if (!opts.onReloadData) throw new StoreError('invalid', 'this server does not reload data over the control socket');
      return opts.onReloadData();
    },
    ...(opts.onReload ? { reload: opts.onReload } : {}),
    ...(opts.onExplain ? { explain: opts.onExplain } : {}),
    policies: opts.policies ?? null,
  };
}

/** A request line's bytes as text, or null when they are not UTF-8 (a script in another encoding). */
const utf8 = new TextDecoder('utf-8', { fatal: true });
function lineText(bytes: Uint8Array): string | null {
  try {
    return utf8.decode(bytes);
  } catch {
    return null;
  }
}

/** One request line (null: its bytes were not UTF-8), answered. */
async function handleLine(line: string | null, store: Store, hooks: OperationHooks, refuse?: string): Promise<Response> {
  // Read leniently, such a line's bytes would be stored as U+FFFD in names and policy values.
  if (line === null) return errorResponse(null, 'bad_request', 'request is not UTF-8 text');
  let req: unknown;
  try {
    req = JSON.parse(line);
  } catch {
    return errorResponse(null, 'bad_request', 'request is not valid JSON');
  }
  // JSON.parse keeps the last of a key written twice, and builds any nesting.
  const fault = jsonFault(line, req as JsonValue, DOCUMENT_LIMITS);
  if (fault !== null) return errorResponse(null, 'bad_request', `request refused: ${fault}`);
  if (!req || typeof req !== 'object' || Array.isArray(req)) return errorResponse(null, 'bad_request', 'request must be a JSON object');
  const { id: rawId, cmd, args = {} } = req as Record<string, unknown>;
  const id = typeof rawId === 'string' || typeof rawId === 'number' ? rawId : null;
  if (typeof cmd !== 'string') return errorResponse(id, 'bad_request', 'request needs a "cmd" string');
  if (!isOperationName(cmd)) return errorResponse(id, 'unknown_command', `unknown command ${quoted(cmd, 100)}`);
  // A fleet edge provisions nothing, but reloads like any server.
  if (refuse !== undefined && !RELOADS.has(cmd)) return errorResponse(id, 'invalid', refuse);
  if (!args || typeof args !== 'object' || Array.isArray(args)) return errorResponse(id, 'bad_request', '"args" must be a JSON object');
  try {
    const result = await runOperation(store, cmd, args as Record<string, unknown>, hooks);
    return { id, ok: true, result };
  } catch (e) {
    if (e instanceof StoreError) return errorResponse(id, e.code, e.message);
    log.error({ err: e, cmd }, 'control: command failed');
    return errorResponse(id, 'internal', (e as Error).message ?? String(e));
  }
}

/** Operations that only reload the server's own files, allowed where provisioning is refused. */
const RELOADS: ReadonlySet<string> = new Set<OperationName>(['data.reload', 'server.reload']);

/** Bytes of request text held for unanswered requests, over all of a server's connections. */
interface ByteBudget {
  held: number;
}

function serveConnection(socket: net.Socket, store: Store, hooks: OperationHooks, budget: ByteBudget, idleMs: number, refuse?: string): void {
  // The line being received, as its chunks: joined once its end arrives, never re-read per chunk.
  let partial: Buffer[] = [];
  let partialBytes = 0;
  // Whole lines waiting for their turn, with their bytes (newline included).
  const lines: Array<{ text: string | null; bytes: number }> = [];
  let running = false;
  // This connection's share of budget.held: the line being received and the lines not answered yet.
  let held = 0;
  // Set when a limit stops the reading: answered after the lines already queued, then the end.
  let last: Response | undefined;
  let stopped = false;
  // The client has ended its side (`nc -N`, shutdown(SHUT_WR)): it still reads its answers.
  let ended = false;
  const hold = (n: number) => {
    held += n;
    budget.held += n;
  };
  const release = (n: number) => {
    const k = Math.min(n, held);
    held -= k;
    budget.held -= k;
  };
  socket.setTimeout(idleMs, () => socket.destroy());
  socket.on('error', () => socket.destroy()); // a client that went away is not the server's problem
  socket.on('close', () => {
    // Nobody is left to answer: the lines not started are dropped (one running still finishes).
    lines.length = 0;
    partial = [];
    release(held);
  });
  const send = (r: Response) => {
    if (socket.destroyed) return;
    // A client that does not read would otherwise have every answer buffered here: read
    // nothing more until what was written has gone (next() waits for it too).
    if (!socket.write(JSON.stringify(r) + '\n')) socket.pause();
  };
  socket.on('end', () => {
    // A line without its newline is no request; the ones queued are answered, then the end.
    partial = [];
    release(partialBytes);
    partialBytes = 0;
    ended = true;
    next();
  });
  socket.on('drain', () => {
    if (!stopped) socket.resume();
    next();
  });
  // One request at a time per connection, so answers come back in request order. The next
  // one waits for a turn of the event loop: a run of requests that fail at once must not
  // hold the main thread (and with it the account API) until the last is answered.
  const next = () => {
    if (running || socket.destroyed || socket.writableNeedDrain) return;
    const line = lines.shift();
    if (line === undefined) {
      if (last) {
        send(last);
        last = undefined;
        socket.end();
      } else if (ended) {
        socket.end();
      }
      return;
    }
    running = true;
    // A request in progress is not idleness: `ivtd data update` waits up to 120 s for a reload.
    socket.setTimeout(0);
    handleLine(line.text, store, hooks, refuse)
      .catch((e: unknown) => errorResponse(null, 'internal', String(e)))
      .then((r) => {
        running = false;
        if (!socket.destroyed) socket.setTimeout(idleMs);
        release(line.bytes);
        send(r);
        setImmediate(next);
      });
  };
  const stop = (r: Response) => {
    stopped = true;
    socket.pause();
    partial = [];
    release(partialBytes);
    partialBytes = 0;
    last = r;
    next();
  };
  socket.on('data', (chunk: Buffer) => {
    if (stopped) return;
    // Every connection's unanswered bytes together stay bounded, whatever their number.
    if (budget.held + chunk.length > MAX_BUFFERED_BYTES) {
      return stop(errorResponse(null, 'busy', 'the control socket holds too many unfinished requests; try again'));
    }
    let from = 0;
    let nl: number;
    while ((nl = chunk.indexOf(0x0a, from)) >= 0) {
      const piece = chunk.subarray(from, nl);
      from = nl + 1;
      const bytes = partialBytes + piece.length;
      if (bytes > MAX_LINE_BYTES) return stop(errorResponse(null, 'too_large', `request line longer than ${MAX_LINE_BYTES} bytes`));
      const text = lineText(partial.length ? Buffer.concat([...partial, piece]) : piece);
      release(partialBytes);
      partial = [];
      partialBytes = 0;
      if (text !== null && text.trim() === '') continue;
      // The CLI sends one request per connection; a client that sends more than it reads
      // answers for is cut off rather than having them all queued.
      if (lines.length + (running ? 1 : 0) >= MAX_PENDING_REQUESTS) {
        return stop(errorResponse(null, 'busy', `more than ${MAX_PENDING_REQUESTS} requests waiting for their answers on one connection`));
      }
      hold(bytes + 1);
      lines.push({ text, bytes: bytes + 1 });
    }
    if (from < chunk.length) {
      const rest = chunk.subarray(from);
      partial.push(rest);
      partialBytes += rest.length;
      hold(rest.length);
      if (partialBytes > MAX_LINE_BYTES) return stop(errorResponse(null, 'too_large', `request line longer than ${MAX_LINE_BYTES} bytes`));
    }
    next();
  });
}

export interface ControlServerOptions {
  dataDir: string;
  store: Store;
  onKeysChanged: () => void;
  /** The server's data reload (same as SIGHUP), for `ivtd data update`. */
  onReloadData?: () => Promise<{ ok: boolean; errors: string[] }>;
  /** `ivtd reload`: the server's SIGHUP reload (config and data), with its outcome. */
  onReload?: () => Promise<ReloadOutcome>;
  /** A policy changed (the lookup threads get it now rather than at the next 5 s check). */
  onPolicyChanged?: () => void;
  /** Compiled policies of the running server: a change must fit its memory budget share. */
  policies?: PolicyService | null;
  /** `ivtd explain`: judges a lookup with the server's engine. */
  onExplain?: (query: string, body: string | null) => Promise<unknown>;
  /** When set, every command is refused with this message (a fleet edge provisions nothing). */
  refuse?: string;
  /** A connection with no request in progress and no traffic this long is dropped; CONNECTION_IDLE_MS unless a test shortens it. */
  idleMs?: number;
}

/** Listens on `<dataDir>/ivtd.sock` (mode 0600). Refuses to start when another server answers there. */
export async function startControlServer(opts: ControlServerOptions): Promise<{ close(): Promise<void> }> {
  mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
  const path = controlSocketPath(opts.dataDir);
  // Held until close: libuv unlinks the socket through the name it was bound with.
  const addr = socketAddress(opts.dataDir);
  const hooks = safeHooks(opts);
  const sockets = new Set<net.Socket>();
  const budget: ByteBudget = { held: 0 };
  let served = 0;
  let refused = 0;
  let lastRefusalLog = -Infinity;
  // Half-open: a client that ends its side after sending still gets its answers (without
  // this, customer.create's one-time keys were lost while the customer was committed).
  const server = net.createServer({ allowHalfOpen: true }, (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    if (served >= MAX_CONNECTIONS) {
      refused++;
      if (Date.now() - lastRefusalLog >= REFUSAL_LOG_INTERVAL_MS) {
        log.warn({ refused, max: MAX_CONNECTIONS }, 'control: too many control connections, refusing new ones');
        lastRefusalLog = Date.now();
        refused = 0;
      }
      // Closed once the line is written: a refused connection must not hold a descriptor.
      socket.on('error', () => socket.destroy());
      socket.end(JSON.stringify(errorResponse(null, 'busy', 'too many control connections')) + '\n', () => socket.destroy());
      return;
    }
    served++;
    socket.on('close', () => served--);
    serveConnection(socket, opts.store, hooks, budget, opts.idleMs ?? CONNECTION_IDLE_MS, opts.refuse);
  });
  try {
    await removeStaleSocket(path, addr.address);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      // The socket file is created by bind(), inside listen(), with the process umask: set
      // to 0177 for that call only, it is born 0600 (a chmod afterwards leaves a window in
      // which anyone may connect). listen() binds synchronously; errors arrive as events.
      const umask = process.umask(SOCKET_UMASK);
      try {
        server.listen(addr.address, () => {
          server.off('error', reject);
          resolve();
        });
      } finally {
        process.umask(umask);
      }
    });
  } catch (e) {
    server.close();
    addr.release();
    throw e;
  }
  const ino = statSync(path).ino;
  server.on('error', (e) => log.error({ err: e }, 'control socket error'));

  let closing: Promise<void> | undefined;
  return {
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => {
          addr.release();
          resolve();
        });
        for (const s of sockets) s.destroy();
        // Closing the server unlinks the socket; make sure, but never remove a successor's.
        try {
          if (statSync(path).ino === ino) unlinkSync(path);
        } catch {
          // already gone
        }
      });
      return closing;
    },
  };
}

async function removeStaleSocket(path: string, address: string): Promise<void> {
  let isSocket: boolean;
  try {
    isSocket = lstatSync(path).isSocket();
  } catch {
    return; // nothing there
  }
  if (!isSocket) throw new Error(`${path} exists and is not a socket; remove it or choose another --data-dir`);
  const live = await new Promise<boolean>((resolve, reject) => {
    const probe = net.connect(address);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', (e) => (isNoServer(e) ? resolve(false) : reject(e)));
  });
  if (live) throw new Error(`another ivtd server is already listening on ${path}`);
  unlinkSync(path);
}

let nextId = 1;

/**
 * Sends one command to the server serving `dataDir` and returns its result. Rejects with
 * ControlUnavailableError when no server listens, StoreError for the operation's expected
 * failures, ControlError otherwise.
 */
export function sendControl<N extends OperationName>(
  dataDir: string,
  cmd: N,
  args: Record<string, unknown>,
  opts: { timeoutMs?: number } = {},
): Promise<OperationResult<N>> {
  const path = controlSocketPath(dataDir);
  const id = nextId++;
  return new Promise((resolve, reject) => {
    let addr: ReturnType<typeof socketAddress>;
    try {
      addr = socketAddress(dataDir);
    } catch (e) {
      reject(isNoServer(e) ? new ControlUnavailableError(path) : e);
      return;
    }
    let connected = false;
    let settled = false;
    let buffered = '';
    const finish = (err: Error | null, result?: unknown) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      addr.release();
      if (err) reject(err);
      else resolve(result as OperationResult<N>);
    };
    const socket = net.connect(addr.address);
    socket.setEncoding('utf8');
    socket.setTimeout(opts.timeoutMs ?? CLIENT_TIMEOUT_MS, () =>
      finish(new ControlError('timeout', `the ivtd server on ${path} did not answer in time`)),
    );
    socket.on('connect', () => {
      connected = true;
      addr.release();
      socket.write(JSON.stringify({ id, cmd, args }) + '\n');
    });
    socket.on('error', (e) => finish(!connected && isNoServer(e) ? new ControlUnavailableError(path) : e));
    socket.on('close', () => finish(new ControlError('closed', `the ivtd server on ${path} closed the connection without answering`)));
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      if (!chunk.includes('\n')) return;
      const nl = buffered.indexOf('\n');
      if (nl < 0) return;
      let res: Response;
      try {
        res = JSON.parse(buffered.slice(0, nl)) as Response;
      } catch {
        finish(new ControlError('bad_request', 'the ivtd server sent a malformed response'));
        return;
      }
      if (res.ok) return finish(null, res.result);
      const code = res.error?.code ?? 'internal';
      const message = res.error?.message ?? 'the ivtd server reported an error';
      finish((STORE_ERROR_CODES as readonly string[]).includes(code) ? new StoreError(code as StoreErrorCode, message) : new ControlError(code, message));
    });
  });
}
