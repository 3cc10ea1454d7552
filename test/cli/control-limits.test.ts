// The control socket against clients that do not behave: floods, clients that never read,
// half-closed connections, too many connections, slow operations.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import net from 'node:net';
import { join } from 'node:path';
import { Store } from '../../src/store/db.ts';
import { controlSocketPath, MAX_CONNECTIONS, sendControl, startControlServer, type ControlServerOptions } from '../../src/provisioning/control.ts';
import { log } from '../../src/log.ts';

type Reply = Record<string, any>;

/** A data dir with a short path (sun_path is 108 bytes). */
function shortDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-ctl-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A control server on a temp data dir; `extra` overrides its options. */
async function serve(t: Test, extra: Partial<ControlServerOptions> = {}): Promise<{ dir: string; path: string; store: Store }> {
  const dir = shortDir(t);
  const store = await Store.open(dir);
  const server = await startControlServer({ dataDir: dir, store, onKeysChanged() {}, ...extra });
  t.teardown(async () => {
    await server.close();
    store.close();
  });
  return { dir, path: controlSocketPath(dir), store };
}

/**
 * Writes `payload` on a new connection (then half-closes it when `end`), and collects the
 * response lines until the server closes or `max` lines came, whichever is first.
 */
function exchange(path: string, payload: string | Buffer, opts: { end?: boolean; max?: number } = {}): Promise<{ replies: Reply[]; closed: boolean }> {
  return new Promise((resolve) => {
    const sock = net.connect({ path, allowHalfOpen: true });
    let buf = '';
    const replies: Reply[] = [];
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      sock.destroy();
      resolve({ replies, closed });
    };
    sock.setEncoding('utf8');
    sock.on('connect', () => (opts.end ? sock.end(payload) : sock.write(payload)));
    sock.on('data', (chunk: string) => {
      buf += chunk;
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        replies.push(JSON.parse(buf.slice(0, nl)) as Reply);
        buf = buf.slice(nl + 1);
        if (replies.length === (opts.max ?? Infinity)) return finish(false);
      }
    });
    sock.on('error', () => finish(true));
    sock.on('end', () => finish(true));
    sock.on('close', () => finish(true));
  });
}

const line = (o: unknown) => JSON.stringify(o) + '\n';

t.test('an unknown command is quoted clipped, not repeated whole', async (t) => {
  const { path } = await serve(t);
  const { replies } = await exchange(path, line({ id: 1, cmd: 'x'.repeat(100_000), args: {} }), { max: 1 });
  t.equal(replies[0]?.error?.code, 'unknown_command');
  t.ok(replies[0]!.error.message.length < 200, 'a short message');
  t.match(replies[0]!.error.message, /^unknown command "x{100}…"$/);
  const short = await exchange(path, line({ id: 2, cmd: 'drop.tables', args: {} }), { max: 1 });
  t.equal(short.replies[0]?.error?.message, 'unknown command "drop.tables"', 'a short name as before');
});

/** Opens a connection and resolves once it is connected. */
function connected(path: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(path, () => resolve(s));
    s.on('error', reject);
  });
}

t.test('connections past the cap are answered one error line and closed, with one warning', async (t) => {
  const { dir, path } = await serve(t);
  const warnings: unknown[] = [];
  const warn = log.warn;
  log.warn = ((...a: unknown[]) => void warnings.push(a)) as typeof log.warn;
  const idle: net.Socket[] = [];
  t.teardown(() => {
    log.warn = warn;
    for (const s of idle) s.destroy();
  });
  for (let i = 0; i < MAX_CONNECTIONS; i++) idle.push(await connected(path));
  const over = await exchange(path, line({ id: 1, cmd: 'customer.list', args: {} }), { max: 2 });
  t.same(over.replies, [{ id: null, ok: false, error: { code: 'busy', message: 'too many control connections' } }], 'one error line');
  t.ok(over.closed, 'then closed');
  const again = await exchange(path, line({ id: 1, cmd: 'customer.list', args: {} }), { max: 2 });
  t.equal(again.replies[0]?.error?.code, 'busy');
  t.equal(warnings.length, 1, 'one warning for both');

  idle.pop()!.destroy();
  await new Promise((r) => setTimeout(r, 200));
  t.same(await sendControl(dir, 'customer.list', {}), { customers: [] }, 'a freed place serves again');
});
