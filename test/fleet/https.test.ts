// An https:// --clickhouse-url against a real ClickHouse behind a TLS-terminating proxy with
// a self-signed certificate made here by openssl: trusted through NODE_EXTRA_CA_CERTS (a
// process of its own, as Node reads it at start), statements go through; not trusted, the
// failure says so, names the remedy and is known not to have reached ClickHouse.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { ClickHouse, FleetError } from '../../src/fleet/clickhouse.ts';
import { parseClickHouseUrl } from '../../src/base/clickhouse-url.ts';
import { runProcess } from '../cli/run-cli.ts';
import { clickhouseAvailable, startClickHouse } from '../helpers/clickhouse.ts';

const ROOT = join(import.meta.dirname, '..', '..');

t.test('https:// ClickHouse URLs', { skip: clickhouseAvailable() ? false : 'clickhouse-server is not installed' }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'ivtd-ch-tls-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', '/CN=clickhouse-test', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });

  const server = await startClickHouse();
  t.teardown(() => server.destroy());
  // TLS in front of ClickHouse's HTTP port, as a load balancer or ClickHouse's https_port would be.
  const sockets = new Set<net.Socket>();
  const proxy = tls.createServer({ cert: readFileSync(cert), key: readFileSync(key) }, (client) => {
    const upstream = net.connect(server.httpPort, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        client.destroy();
        upstream.destroy();
        sockets.delete(s);
      });
    }
    client.pipe(upstream).pipe(client);
  });
  proxy.on('tlsClientError', () => undefined);
  proxy.listen(0, '127.0.0.1');
  await once(proxy, 'listening');
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    proxy.close();
  });
  const port = (proxy.address() as net.AddressInfo).port;
  const url = `https://127.0.0.1:${port}/tls_fleet`;

  t.test('trusted through NODE_EXTRA_CA_CERTS: statements reach ClickHouse over TLS', async (t) => {
    const script = join(dir, 'use.mts');
    writeFileSync(
      script,
      [
        `import { ClickHouse } from ${JSON.stringify(join(ROOT, 'src/fleet/clickhouse.ts'))};`,
        `import { parseClickHouseUrl } from ${JSON.stringify(join(ROOT, 'src/base/clickhouse-url.ts'))};`,
        `const ch = new ClickHouse(parseClickHouseUrl(${JSON.stringify(url)}));`,
        'await ch.ensureDatabase();',
        "await ch.command('CREATE TABLE IF NOT EXISTS tls_fleet.t (x UInt32) ENGINE = MergeTree ORDER BY x');",
        "await ch.insert('t', [{ x: 7 }, { x: 9 }]);",
        "const rows = await ch.rows('SELECT sum(x) AS s FROM tls_fleet.t');",
        'process.stdout.write(JSON.stringify(rows));',
        'await ch.close();',
      ].join('\n'),
    );
    const r = await runProcess(process.execPath, ['--import', 'tsx', script], { cwd: ROOT, env: { ...process.env, NODE_EXTRA_CA_CERTS: cert } });
    t.equal(r.code, 0, r.stderr);
    const rows = JSON.parse(r.stdout) as Array<{ s: string | number }>;
    t.equal(String(rows[0]?.s), '16', 'the rows came back through TLS');
    t.equal((await server.sql('SELECT count() FROM tls_fleet.t')).trim(), '2', 'and are in ClickHouse');
  });

  t.test('not trusted: a clear failure that never reached ClickHouse', async (t) => {
    const ch = new ClickHouse(parseClickHouseUrl(`https://127.0.0.1:${port}/tls_untrusted`));
    t.teardown(() => ch.close());
    const e = await ch.ensureDatabase().then(
      () => null,
      (err: unknown) => err,
    );
    t.type(e, FleetError);
    const fe = e as FleetError;
    t.match(fe.message, /ClickHouse https:\/\/127\.0\.0\.1:\d+\/tls_untrusted: the TLS certificate is not trusted \(DEPTH_ZERO_SELF_SIGNED_CERT: /);
    t.match(fe.message, /NODE_EXTRA_CA_CERTS/, 'names the remedy');
    t.equal(fe.uncertain, false, 'known not to have been sent');
    t.equal((await server.sql("SELECT count() FROM system.databases WHERE name = 'tls_untrusted'")).trim(), '0');
  });

  t.test('https:// to a plain-HTTP port: said to be a TLS handshake failure', async (t) => {
    // A ClientHello without a line break makes ClickHouse wait silently for the rest of an
    // HTTP request (9 in 60 measured): the request then times out, and the TLS probe says why.
    const ch = new ClickHouse(parseClickHouseUrl(`https://127.0.0.1:${server.httpPort}/tls_plain`), { requestTimeoutMs: 3000 });
    t.teardown(() => ch.close());
    const e = (await ch.ensureDatabase().then(
      () => null,
      (err: unknown) => err,
    )) as FleetError;
    t.type(e, FleetError);
    t.match(e.message, /TLS handshake failed/);
    t.equal(e.uncertain, false);
  });
});
