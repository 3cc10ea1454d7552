import t, { type Test } from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import net from 'node:net';
import { join } from 'node:path';
import { liveSessionUser, startSession } from '../../src/account/sessions.ts';
import { Store } from '../../src/store/db.ts';
import { activePrebidKeys } from '../../src/store/api-keys.ts';
import { findUserForLogin } from '../../src/store/logins.ts';
import { StoreError } from '../../src/store/store-error.ts';
import { hashKey } from '../../src/base/secrets.ts';
import {
  controlSocketPath,
  ControlError,
  ControlUnavailableError,
  MAX_LINE_BYTES,
  sendControl,
  startControlServer,
} from '../../src/provisioning/control.ts';
import { runIvtd } from './run-cli.ts';

/** A data dir with a short path, for tests that dial the socket path directly (sun_path is 108 bytes). */
function shortDir(t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-ctl-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

interface Harness {
  dir: string;
  store: Store;
  keysChanged: number;
}

/** A control server on a temp data dir whose store is held open by this test process. */
async function harness(t: Test, dir = t.testdir()): Promise<Harness> {
  const store = await Store.open(dir);
  const h: Harness = { dir, store, keysChanged: 0 };
  const server = await startControlServer({
    dataDir: dir,
    store,
    onKeysChanged: () => h.keysChanged++,
  });
  t.teardown(async () => {
    await server.close();
    store.close();
  });
  return h;
}

/** Sends raw lines on one connection and collects `n` response lines. */
function rawExchange(path: string, payload: string, n: number): Promise<Array<Record<string, unknown>>> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(path);
    let buf = '';
    const out: Array<Record<string, unknown>> = [];
    sock.setEncoding('utf8');
    sock.on('connect', () => sock.write(payload));
    sock.on('data', (chunk: string) => {
      buf += chunk;
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        out.push(JSON.parse(buf.slice(0, nl)) as Record<string, unknown>);
        buf = buf.slice(nl + 1);
        if (out.length === n) {
          sock.destroy();
          resolve(out);
        }
      }
    });
    sock.on('error', reject);
    sock.on('close', () => resolve(out));
  });
}

t.test('the CLI goes through the socket of a running server', async (t) => {
  const h = await harness(t);
  // While this process holds the DuckDB file, a direct open from another process fails.
  const created = await runIvtd(['customer', 'create', '--name', 'Acme', '--username', 'alice', '--password-stdin', '--json', '--data-dir', h.dir], {
    stdin: 'alice-pass\n',
  });
  t.equal(created.code, 0, created.stderr);
  const c = JSON.parse(created.stdout) as { customer_id: string; prebid_key: string };
  t.equal(h.keysChanged, 1, 'onKeysChanged after customer create');
  t.same(
    (await activePrebidKeys(h.store)).map((k) => k.key_hash),
    [hashKey(c.prebid_key)],
    'the server store sees the new customer',
  );

  const rotated = await runIvtd(['key', 'rotate', '--customer', 'alice', '--kind', 'prebid', '--grace', '0', '--json', '--data-dir', h.dir]);
  t.equal(rotated.code, 0, rotated.stderr);
  const r = JSON.parse(rotated.stdout) as { key: string };
  t.equal(h.keysChanged, 2, 'onKeysChanged after key rotate');
  t.same((await activePrebidKeys(h.store)).map((k) => k.key_hash), [hashKey(r.key)]);

  // A user change needs no hook: the server checks sessions against the store per request.
  const session = await startSession(h.store, { user_id: (await findUserForLogin(h.store, 'alice'))!.user_id, refreshTtl: 3600 });
  t.equal(await liveSessionUser(h.store, session!.owner), 'alice', 'a live dashboard session');
  const disabled = await runIvtd(['user', 'disable', '--username', 'ALICE', '--data-dir', h.dir]);
  t.equal(disabled.code, 0, disabled.stderr);
  t.equal(await liveSessionUser(h.store, session!.owner), undefined, 'disabling through the socket ends the session at once');
  t.equal((await findUserForLogin(h.store, 'alice'))!.disabled, true);

  // Expected failures travel back as the same exit codes and messages.
  const ghost = await runIvtd(['key', 'rotate', '--customer', 'ghost', '--kind', 'reporting', '--data-dir', h.dir]);
  t.equal(ghost.code, 1);
  t.match(ghost.stderr, /no customer with id, partner id or username "ghost"/);
  const bad = await runIvtd(['user', 'passwd', '--username', 'alice', '--password', 'short', '--data-dir', h.dir]);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /at least 8/);
  t.equal(h.keysChanged, 2, 'no hook for a failed command');
});

t.test('sendControl: results, store errors, and no server', async (t) => {
  const h = await harness(t);
  const c = await sendControl(h.dir, 'customer.create', { name: 'A', username: 'alice', password: 'password1' });
  t.equal(c.username, 'alice');
  const list = await sendControl(h.dir, 'customer.list', {});
  t.equal(list.customers[0]?.customer_id, c.customer_id);

  const conflict = await sendControl(h.dir, 'user.add', { customer: 'alice', username: 'Alice', password: 'password1' }).catch((e: unknown) => e);
  t.ok(conflict instanceof StoreError);
  t.equal((conflict as StoreError).code, 'conflict');
  const badArgs = await sendControl(h.dir, 'key.rotate', { customer: 'alice', kind: 'prebid', graceSeconds: '10' }).catch((e: unknown) => e);
  t.ok(badArgs instanceof StoreError, 'argument types are checked server-side');
  t.equal((badArgs as StoreError).code, 'invalid');

  const none = t.testdir();
  const err = await sendControl(none, 'customer.list', {}).catch((e: unknown) => e);
  t.ok(err instanceof ControlUnavailableError, 'no socket file');
  const err2 = await sendControl(join(none, 'missing'), 'customer.list', {}).catch((e: unknown) => e);
  t.ok(err2 instanceof ControlUnavailableError, 'no data dir');
});

t.test('the socket file is 0600 from the moment it is bound (no window before a chmod)', async (t) => {
  const dir = shortDir(t);
  const path = controlSocketPath(dir);
  // Observe the file right after bind(): listen() binds synchronously, before any callback.
  const listen = net.Server.prototype.listen;
  const modes: number[] = [];
  net.Server.prototype.listen = function (this: net.Server, ...args: unknown[]) {
    const r = (listen as (...a: unknown[]) => net.Server).apply(this, args);
    if (args[0] === path) modes.push(lstatSync(path).mode & 0o777);
    return r;
  } as typeof listen;
  const umask = process.umask(0o022); // a usual umask: a plain bind would make the socket 0755
  t.teardown(() => {
    net.Server.prototype.listen = listen;
    process.umask(umask);
  });
  const store = await Store.open(dir);
  const server = await startControlServer({ dataDir: dir, store, onKeysChanged: () => undefined });
  t.teardown(async () => {
    await server.close();
    store.close();
  });
  t.same(modes, [0o600], 'born owner-only');
  t.equal(process.umask(), 0o022, 'the process umask is given back');
  t.same(await sendControl(dir, 'customer.list', {}), { customers: [] }, 'and the server answers its owner');
});

t.test('malformed requests get error responses and the server keeps serving', async (t) => {
  const h = await harness(t, shortDir(t));
  const path = controlSocketPath(h.dir);
  t.equal(statSync(path).mode & 0o777, 0o600, 'socket is private to the owner');

  const replies = await rawExchange(
    path,
    [
      '{not json',
      '[1,2]',
      JSON.stringify({ id: 1, cmd: 'drop.tables', args: {} }),
      JSON.stringify({ id: 2, cmd: 'customer.list', args: 'x' }),
      JSON.stringify({ id: 3 }),
      JSON.stringify({ id: 4, cmd: 'customer.list' }),
      JSON.stringify({ id: 'five', cmd: 'user.enable', args: { username: 'ghost' } }),
      '{"id": 6, "cmd": "customer.list", "cmd": "customer.create", "args": {}}',
      `{"id": 7, "cmd": "customer.list", "args": {"x": ${'['.repeat(5000)}"\\u0041"${']'.repeat(5000)}}}`,
    ].join('\n') + '\n',
    9,
  );
  t.same(
    replies.map((r) => [r.id, r.ok, (r.error as { code?: string } | undefined)?.code]),
    [
      [null, false, 'bad_request'],
      [null, false, 'bad_request'],
      [1, false, 'unknown_command'],
      [2, false, 'bad_request'],
      [3, false, 'bad_request'],
      [4, true, undefined],
      ['five', false, 'not_found'],
      [null, false, 'bad_request'],
      [null, false, 'bad_request'],
    ],
    'one response per line, in order',
  );
  t.same(replies[5]!.result, { customers: [] });
  t.match(replies[7]!.error, { message: /^request refused: duplicate key "cmd" at character 34$/ }, 'a key twice: JSON.parse would have run the last');
  t.match(replies[8]!.error, { message: /^request refused: objects and arrays nested deeper than 64 at character \d+$/ });

  const big = await rawExchange(path, 'x'.repeat(MAX_LINE_BYTES + 10), 1);
  t.equal((big[0]?.error as { code: string }).code, 'too_large', 'an endless line is cut off');

  t.same(await sendControl(h.dir, 'customer.list', {}), { customers: [] }, 'still serving');
});

t.test('start refuses a live server, replaces a stale socket, close removes it', async (t) => {
  const h = await harness(t);
  const again = await startControlServer({ dataDir: h.dir, store: h.store, onKeysChanged() {} }).catch((e: unknown) => e);
  t.match((again as Error).message, /another ivtd server is already listening/);
  t.same(await sendControl(h.dir, 'customer.list', {}), { customers: [] }, 'the first server is unaffected');

  // A socket file left by a process that died without closing it.
  const dir = shortDir(t);
  const sock = controlSocketPath(dir);
  const child = spawnSync(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(sock)}, () => process.exit(0))`]);
  t.equal(child.status, 0);
  t.ok(statSync(sock).isSocket(), 'stale socket file exists');
  t.ok((await sendControl(dir, 'customer.list', {}).catch((e: unknown) => e)) instanceof ControlUnavailableError, 'stale socket = no server');

  const store = await Store.open(dir);
  const server = await startControlServer({ dataDir: dir, store, onKeysChanged() {} });
  t.same(await sendControl(dir, 'customer.list', {}), { customers: [] }, 'serving on the replaced socket');
  await server.close();
  t.notOk(existsSync(sock), 'close removes the socket file');
  store.close();

  const odd = t.testdir();
  writeFileSync(controlSocketPath(odd), 'not a socket');
  const refused = await startControlServer({ dataDir: odd, store: h.store, onKeysChanged() {} }).catch((e: unknown) => e);
  t.match((refused as Error).message, /not a socket/, 'never deletes a regular file');
});

t.test('a data dir deeper than a socket path allows still works', async (t) => {
  const dir = join(t.testdir(), 'd'.repeat(60), 'e'.repeat(60));
  mkdirSync(dir, { recursive: true });
  t.ok(Buffer.byteLength(controlSocketPath(dir)) > 107);
  const h = await harness(t, dir);
  const c = await sendControl(dir, 'customer.create', { name: 'A', username: 'alice', password: 'password1' });
  t.equal(h.keysChanged, 1);
  t.equal(c.username, 'alice');
  t.ok(existsSync(controlSocketPath(dir)), 'socket lives in the data dir itself');
});

t.test('a throwing hook does not fail a committed command', async (t) => {
  const dir = t.testdir();
  const store = await Store.open(dir);
  const server = await startControlServer({
    dataDir: dir,
    store,
    onKeysChanged: () => {
      throw new Error('boom');
    },
  });
  t.teardown(async () => {
    await server.close();
    store.close();
  });
  const c = await sendControl(dir, 'customer.create', { name: 'A', username: 'alice', password: 'password1' });
  t.equal(c.username, 'alice');
  const err = await sendControl(dir, 'customer.create', { name: 'A', username: 'alice', password: 'password1' }).catch((e: unknown) => e);
  t.ok(err instanceof StoreError && !(err instanceof ControlError));
});
