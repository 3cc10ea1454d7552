// An https:// ClickHouse URL that points at a port which does not speak TLS: the request
// fails at once (the port answers something that is not TLS) or times out (the port waits
// silently for the rest of an HTTP request). After a timeout the port is probed: not TLS
// means the request was never delivered, said plainly; silence is said too, as uncertain.
// Fake servers on loopback, no ClickHouse needed.
import t from 'tap';
import net from 'node:net';
import { once } from 'node:events';
import { ClickHouse, FleetError, probeTls } from '../../src/fleet/clickhouse.ts';
import { parseClickHouseUrl } from '../../src/base/clickhouse-url.ts';

/** A TCP server: connection n (from 0) is answered as `behave(n)` says. */
async function fakeServer(behave: (n: number) => 'silent' | 'http'): Promise<{ port: number; connections: () => number; close: () => Promise<void> }> {
  let n = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
    const how = behave(n++);
    if (how === 'http') s.once('data', () => s.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n'));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as net.AddressInfo).port,
    connections: () => n,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

async function failure(port: number): Promise<FleetError> {
  const ch = new ClickHouse(parseClickHouseUrl(`https://127.0.0.1:${port}/probe_db`), { requestTimeoutMs: 500, tlsProbeMs: 300 });
  try {
    const e = await ch.ensureDatabase().then(() => null, (err: unknown) => err);
    if (!(e instanceof FleetError)) throw new Error(`expected a FleetError, got ${String(e)}`);
    return e;
  } finally {
    await ch.close();
  }
}

t.test('a port answering plain HTTP at once: the TLS handshake failed, the request was not sent', async (t) => {
  const srv = await fakeServer(() => 'http');
  t.teardown(srv.close);
  const e = await failure(srv.port);
  t.match(e.message, /the TLS handshake failed \((EPROTO|ERR_SSL_WRONG_VERSION_NUMBER)/);
  t.equal(e.uncertain, false);
  t.equal(await probeTls('127.0.0.1', srv.port, 300, 1).then((p) => p.kind), 'not-tls', 'the probe says the same');
});

t.test('a request that times out on a port that is not TLS: probed, said plainly, certain', async (t) => {
  // The request's connection waits silently; the probes are answered in plain HTTP.
  const srv = await fakeServer((n) => (n === 0 ? 'silent' : 'http'));
  t.teardown(srv.close);
  const e = await failure(srv.port);
  t.match(e.message, /the TLS handshake failed \((EPROTO|ERR_SSL_WRONG_VERSION_NUMBER), after CREATE DATABASE timed out\): that port does not speak TLS/);
  t.equal(e.uncertain, false, 'a request over TLS to a port without TLS was never delivered');
  t.ok(srv.connections() >= 2, 'the port was probed');
});

t.test('a port that stays silent: still uncertain, and the hint says the handshake did not complete', async (t) => {
  const srv = await fakeServer(() => 'silent');
  t.teardown(srv.close);
  const e = await failure(srv.port);
  t.match(e.message, /got no clear answer: Timeout error.*a TLS handshake with that port did not complete within 0\.3 s either: is it ClickHouse's https port/);
  t.equal(e.uncertain, true, 'nothing shows the request was not delivered');
  t.equal(srv.connections(), 4, 'the request, then three probes (each hello is new)');
});

t.test('close() ends a probe in progress: shutdown does not wait for it', async (t) => {
  const srv = await fakeServer(() => 'silent');
  t.teardown(srv.close);
  const ch = new ClickHouse(parseClickHouseUrl(`https://127.0.0.1:${srv.port}/probe_db`), { requestTimeoutMs: 300, tlsProbeMs: 10_000 });
  const t0 = performance.now();
  const failed = ch.ensureDatabase().then(() => null, (err: unknown) => err);
  // Past the request's timeout, inside the first probe.
  while (srv.connections() < 2 && performance.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 20));
  t.equal(srv.connections(), 2, 'probing');
  await ch.close();
  const e = await failed;
  t.ok(e instanceof FleetError && e.uncertain, 'an uncertain failure');
  t.ok(performance.now() - t0 < 3000, `settled ${Math.round(performance.now() - t0)} ms after the start, not after three 10-s probes`);
});
