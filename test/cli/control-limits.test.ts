// The control socket against clients that do not behave: floods, clients that never read,
// half-closed connections, too many connections, slow operations.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import net from 'node:net';
import { join } from 'node:path';
import { Store } from '../../src/store/db.ts';
import { controlSocketPath, MAX_BUFFERED_BYTES, MAX_CONNECTIONS, MAX_LINE_BYTES, MAX_PENDING_REQUESTS, sendControl, startControlServer, type ControlServerOptions } from '../../src/provisioning/control.ts';
import { log } from '../../src/base/log.ts';

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

t.test('a flood of requests on one connection is cut off after a bounded number of answers', async (t) => {
  const { dir, path } = await serve(t);
  const { replies, closed } = await exchange(path, 'x\n'.repeat(20_000), { max: 1000 });
  t.ok(closed, 'the server closes the connection');
  t.ok(replies.length <= MAX_PENDING_REQUESTS + 1, `at most ${MAX_PENDING_REQUESTS} answers and an error (${replies.length})`);
  t.same(replies.at(-1), { id: null, ok: false, error: { code: 'busy', message: `more than ${MAX_PENDING_REQUESTS} requests waiting for their answers on one connection` } });
  t.ok(replies.slice(0, -1).every((r) => r.error?.code === 'bad_request'), 'the requests before it are answered');
  t.same(await sendControl(dir, 'customer.list', {}), { customers: [] }, 'still serving');
});

function resolvers(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** A data reload hook that waits until the test lets it finish, counting its calls. */
function gatedReload(answer: { ok: boolean; errors: string[] } = { ok: true, errors: [] }) {
  const g = { calls: 0, started: resolvers(), release: resolvers() };
  const hook = async () => {
    g.calls++;
    g.started.resolve();
    await g.release.promise;
    return answer;
  };
  return { g, hook };
}

t.test('the requests of a connection that went away are not run', async (t) => {
  const { g, hook } = gatedReload();
  const { path } = await serve(t, { onReloadData: hook });
  const sock = await connected(path);
  sock.write(line({ id: 1, cmd: 'data.reload', args: {} }).repeat(10));
  await g.started.promise;
  sock.destroy();
  await new Promise((r) => setTimeout(r, 200));
  g.release.resolve();
  await new Promise((r) => setTimeout(r, 1000));
  t.equal(g.calls, 1, 'only the request already running');
});

t.test('a client that does not read its answers stops the server from running more requests', async (t) => {
  const { g, hook } = gatedReload({ ok: false, errors: ['e'.repeat(1 << 20)] });
  g.release.resolve();
  const { path } = await serve(t, { onReloadData: hook });
  const sock = net.connect({ path, allowHalfOpen: true });
  sock.pause();
  t.teardown(() => sock.destroy());
  sock.write(line({ id: 1, cmd: 'data.reload', args: {} }).repeat(20));
  await new Promise((r) => setTimeout(r, 1500));
  t.ok(g.calls < 8, `a few answers are buffered, not all 20 (${g.calls})`);
  // Reading them, the client gets every answer, in order.
  let buf = '';
  const n = await new Promise<number>((resolve) => {
    let count = 0;
    sock.setEncoding('utf8');
    sock.on('data', (c: string) => {
      buf += c;
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const r = JSON.parse(buf.slice(0, nl)) as Reply;
        buf = buf.slice(nl + 1);
        if (r.ok !== true || r.result.errors[0].length !== 1 << 20) resolve(-1);
        if (++count === 20) resolve(count);
      }
    });
    sock.on('close', () => resolve(count));
    sock.resume();
  });
  t.equal(n, 20, 'all 20 answers once read');
  t.equal(g.calls, 20);
});

t.test('the bytes held for unfinished requests are bounded across connections', async (t) => {
  const { dir, path } = await serve(t);
  const holders: net.Socket[] = [];
  t.teardown(() => holders.forEach((s) => s.destroy()));
  const each = MAX_LINE_BYTES - 1000;
  const n = Math.floor(MAX_BUFFERED_BYTES / each);
  for (let i = 0; i < n; i++) {
    const s = await connected(path);
    holders.push(s);
    await new Promise((r) => s.write('{"cmd":"customer.list","pad":"' + 'a'.repeat(each - 30), r));
  }
  await new Promise((r) => setTimeout(r, 1000));
  const over = await exchange(path, 'b'.repeat(1 << 20), { max: 1 });
  t.same(over.replies, [{ id: null, ok: false, error: { code: 'busy', message: 'the control socket holds too many unfinished requests; try again' } }]);
  holders.forEach((s) => s.destroy());
  await new Promise((r) => setTimeout(r, 500));
  t.same(await sendControl(dir, 'customer.list', {}), { customers: [] }, 'their bytes are freed when they go');
});

t.test('a client that half-closes after its request still gets the answer', async (t) => {
  const { path } = await serve(t);
  const { replies, closed } = await exchange(path, line({ id: 7, cmd: 'customer.create', args: { name: 'A', username: 'alice', password: 'password1' } }), { end: true, max: 2 });
  t.equal(replies.length, 1, 'one answer');
  t.equal(replies[0]?.id, 7);
  t.equal(replies[0]?.ok, true);
  t.match(replies[0]?.result, { username: 'alice', prebid_key: String }, 'with the one-time keys');
  t.ok(closed, 'then the server ends its side too');
});

t.test('the idle timeout does not cut a request in progress, and still drops an idle connection', async (t) => {
  const { g, hook } = gatedReload({ ok: true, errors: [] });
  const { path } = await serve(t, { onReloadData: hook, idleMs: 1000 });
  setTimeout(() => g.release.resolve(), 3000);
  const slow = await exchange(path, line({ id: 1, cmd: 'data.reload', args: {} }), { max: 1 });
  t.same(slow.replies, [{ id: 1, ok: true, result: { ok: true, errors: [] } }], 'a 3 s reload is answered under a 1 s idle timeout');

  const sock = await connected(path);
  const closedAfter = await new Promise<number>((resolve) => {
    const start = Date.now();
    sock.on('close', () => resolve(Date.now() - start));
    sock.resume();
  });
  t.ok(closedAfter < 5000, `an idle connection is dropped (${closedAfter} ms)`);
});

t.test('a request line that is not UTF-8 is refused, not stored with U+FFFD', async (t) => {
  const { dir, path } = await serve(t);
  const good = line({ id: 1, cmd: 'customer.create', args: { name: 'Café', username: 'cafe', password: 'password1' } });
  // The same request with its é as one Latin-1 byte (0xe9), as a script in another encoding sends it.
  const latin1 = Buffer.from(good.replace('Café', 'Caf\u00e9'), 'latin1');
  const { replies } = await exchange(path, latin1, { end: true, max: 2 });
  t.same(replies, [{ id: null, ok: false, error: { code: 'bad_request', message: 'request is not UTF-8 text' } }]);
  t.same(await sendControl(dir, 'customer.list', {}), { customers: [] }, 'nothing was stored');
  const { replies: ok } = await exchange(path, Buffer.from(good, 'utf8'), { end: true, max: 2 });
  t.match(ok, [{ id: 1, ok: true, result: { username: 'cafe' } }], 'the UTF-8 line is taken');
});
