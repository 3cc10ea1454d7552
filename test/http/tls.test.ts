// TLS on the account and reporting ports (--tls-cert, --tls-key), with self-signed pairs made
// here by openssl: the pair's checks, HTTPS on both ports of a running server (and no plain
// HTTP there), then a real `ivtd serve`: a bad pair stops the start, SIGHUP swaps in a renewed
// pair for new connections, and a bad new pair keeps the old one and says why.
import t from 'tap';
import { startServe, type ServeProcess } from '../helpers/serve-process.ts';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TlsError, planTlsReload, readTlsPair, tlsFromConfig } from '../../src/http/tls.ts';
import { startTestServer } from '../helpers/server.ts';

const dir = mkdtempSync(join(tmpdir(), 'ivtd-tls-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

/** A self-signed certificate for 127.0.0.1 and its key, as files `<name>.cert.pem`, `<name>.key.pem`. */
function makePair(name: string): { cert: string; key: string; fingerprint: string } {
  const cert = join(dir, `${name}.cert.pem`);
  const key = join(dir, `${name}.key.pem`);
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', `/CN=ivtd-test-${name}`, '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
  return { cert, key, fingerprint: new X509Certificate(readFileSync(cert)).fingerprint256 };
}

const A = makePair('a');
const B = makePair('b');
/** Both certificates, trusted by the test's client. */
const ca = [readFileSync(A.cert), readFileSync(B.cert)];

/** One request on a new connection; the status, JSON body and the certificate the server showed. */
function httpsCall(port: number, method: string, path: string, opts: { form?: Record<string, string>; headers?: Record<string, string> } = {}): Promise<{ status: number; body: any; fingerprint: string }> {
  const body = opts.form ? new URLSearchParams(opts.form).toString() : undefined;
  const headers: Record<string, string | number> = { ...opts.headers };
  if (body !== undefined) Object.assign(headers, { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) });
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, ca, agent: false, headers }, (res) => {
      const fingerprint = (res.socket as import('node:tls').TLSSocket).getPeerCertificate().fingerprint256;
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null, fingerprint }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

t.test('a pair is checked before use: readable, PEM, key belonging to the certificate', async (t) => {
  const p = readTlsPair(A.cert, A.key);
  t.match(p, { certPath: A.cert, keyPath: A.key, subject: /CN=ivtd-test-a/, expired: false });
  t.throws(() => readTlsPair(A.cert, B.key), { constructor: TlsError, message: `the TLS key ${B.key} does not belong to the certificate ${A.cert}` });
  t.throws(() => readTlsPair(A.key, A.key), { constructor: TlsError, message: new RegExp(`^the TLS certificate ${A.key} is not a PEM certificate`) });
  const notPem = join(dir, 'not.pem');
  writeFileSync(notPem, 'hello\n');
  t.throws(() => readTlsPair(A.cert, notPem), { constructor: TlsError, message: new RegExp(`^the TLS key ${notPem} cannot be used`) });
  t.throws(() => readTlsPair(join(dir, 'missing.pem'), A.key), { constructor: TlsError, message: /^cannot read the TLS certificate .*missing\.pem: ENOENT/ });
  t.equal(tlsFromConfig({ tlsCert: undefined, tlsKey: undefined }), null, 'off when neither is given');
  t.throws(() => tlsFromConfig({ tlsCert: A.cert, tlsKey: undefined }), /--tls-cert and --tls-key go together/);
  t.ok(readTlsPair(A.cert, A.key, Date.now() + 3 * 86_400_000).expired, 'expired once its validity has ended');

  const on = tlsFromConfig({ tlsCert: A.cert, tlsKey: A.key });
  t.match(await planTlsReload(on, { tlsCert: B.cert, tlsKey: B.key }), { pair: { certPath: B.cert }, restartOnly: false }, 'on → on: the new pair');
  t.same(await planTlsReload(null, { tlsCert: B.cert, tlsKey: B.key }), { pair: null, restartOnly: true }, 'off → on: a restart');
  t.same(await planTlsReload(on, { tlsCert: undefined, tlsKey: undefined }), { pair: null, restartOnly: true }, 'on → off: a restart');
  t.same(await planTlsReload(null, { tlsCert: undefined, tlsKey: undefined }), { pair: null, restartOnly: false });
  await t.rejects(planTlsReload(on, { tlsCert: B.cert, tlsKey: A.key }), /does not belong/);
  await t.rejects(planTlsReload(on, { tlsCert: join(dir, 'gone.pem'), tlsKey: A.key }), /^cannot read the TLS certificate .*gone\.pem/);
});

t.test('HTTPS on the account and reporting ports; plain HTTP is not served there', async (t) => {
  const srv = await startTestServer({ tlsCert: A.cert, tlsKey: A.key });
  t.teardown(() => srv.stop());
  const { username, password } = srv.customer;
  const login = await httpsCall(srv.server.ports.api, 'POST', '/login', { form: { username, password } });
  t.equal(login.status, 200);
  t.match(login.body, { access_token: String, token_type: 'bearer' });
  t.equal(login.fingerprint, A.fingerprint);
  const report = await httpsCall(srv.server.ports.reporting, 'GET', '/v1/report');
  t.equal(report.status, 401, 'the reporting API answers over HTTPS');
  t.match(report.body, { error: String, message: String });
  t.equal(report.fingerprint, A.fingerprint);
  const dash = await httpsCall(srv.server.ports.api, 'GET', '/dashboard-config.json');
  t.match(dash.body, { api_url: `https://127.0.0.1:${srv.server.ports.api}`, reporting_url: `https://127.0.0.1:${srv.server.ports.reporting}`, prebid_url: /^http:\/\// }, 'the dashboard is told to use https');
  await t.rejects(fetch(`http://127.0.0.1:${srv.server.ports.api}/login`, { method: 'POST' }), 'no plain HTTP on the account port');
  await t.rejects(fetch(`http://127.0.0.1:${srv.server.ports.reporting}/v1/report`), 'nor on the reporting port');
  t.equal((await fetch(`${srv.prebid}/health-check`)).status, 200, 'pre-bid lookups stay plain HTTP');
});

/** `ivtd serve` over a fresh data dir with these extra args; its output and a waiter on it. */
function serve(args: string[]): ServeProcess {
  const dataDir = mkdtempSync(join(dir, 'data-'));
  return startServe(['--data-dir', dataDir, '--prebid-port', '0', '--api-port', '0', '--reporting-port', '0', '--metrics-port', '0', ...args]);
}

t.test('serve: a key that does not match its certificate stops the start, non-zero, naming the file', async (t) => {
  const p = serve(['--tls-cert', A.cert, '--tls-key', B.key]);
  t.teardown(() => {
    if (p.child.exitCode === null) p.child.kill('SIGKILL');
  });
  const code = await p.exited;
  t.not(code, 0, `exit ${code}`);
  t.match(p.out(), `the TLS key ${B.key} does not belong to the certificate ${A.cert}`);
  t.notMatch(p.out(), /ivtd ready/);
});

t.test('serve: SIGHUP swaps in a renewed pair for new connections; a bad new pair keeps the old one', async (t) => {
  const cert = join(dir, 'live.cert.pem');
  const key = join(dir, 'live.key.pem');
  copyFileSync(A.cert, cert);
  copyFileSync(A.key, key);
  const config = join(dir, 'live.json');
  writeFileSync(config, JSON.stringify({ tlsCert: cert, tlsKey: key }));
  const p = serve(['--config', config]);
  t.teardown(() => {
    if (p.child.exitCode === null) p.child.kill('SIGKILL');
  });
  const api = Number((await p.waitFor(/"port":(\d+),"tls":true,"msg":"account API listening"/))[1]);
  const reporting = Number((await p.waitFor(/"port":(\d+),"tls":true,"msg":"reporting API listening"/))[1]);
  await p.waitFor(/ivtd ready/);
  t.equal((await httpsCall(api, 'GET', '/dashboard-config.json')).fingerprint, A.fingerprint, 'serves the first pair');

  // Renewed in place (same paths), then SIGHUP.
  copyFileSync(B.cert, cert);
  copyFileSync(B.key, key);
  let mark = p.out().length;
  p.child.kill('SIGHUP');
  await p.waitFor(/"msg":"TLS certificate reloaded: new connections use it"/, mark);
  t.equal((await httpsCall(api, 'GET', '/dashboard-config.json')).fingerprint, B.fingerprint, 'account port: the new pair');
  t.equal((await httpsCall(reporting, 'GET', '/v1/report')).fingerprint, B.fingerprint, 'reporting port: the new pair');

  // A half-written renewal: the new certificate with the old key.
  copyFileSync(A.cert, cert);
  mark = p.out().length;
  p.child.kill('SIGHUP');
  const refused = await p.waitFor(/"err":"([^"]*)","msg":"config reload refused: keeping the running config, data and TLS certificate"/, mark);
  t.equal(refused[1], `the TLS key ${key} does not belong to the certificate ${cert}`, 'says why');
  t.equal((await httpsCall(api, 'GET', '/dashboard-config.json')).fingerprint, B.fingerprint, 'still the pair that worked');

  // Turning TLS off takes a restart: said, and HTTPS goes on.
  writeFileSync(config, JSON.stringify({}));
  copyFileSync(B.cert, cert);
  mark = p.out().length;
  p.child.kill('SIGHUP');
  await p.waitFor(/"changed":\["tlsCert","tlsKey"\],"msg":"config changes that take effect only after a restart"/, mark);
  t.equal((await httpsCall(api, 'GET', '/dashboard-config.json')).status, 200, 'HTTPS goes on');

  p.child.kill('SIGTERM');
  t.equal(await p.exited, 0);
});
