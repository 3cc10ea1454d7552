// Hostile input through the real pre-bid listener, over raw sockets so no client cleans
// anything up on the way: every byte value, raw and percent-encoded, in every parameter;
// %00, %FF, overlong and truncated UTF-8; 8 KB uids; keys of 256+ characters; IPv6 zone
// ids; IPv4-mapped IPv6; duplicated and empty parameters; then random mixtures. The process
// must never crash, every answer must be 200 or a JSON 4xx with {error, message}, and
// memory must stay flat while the whole corpus runs six times.
import t from 'tap';
import { MemoryTrend } from '../helpers/memory-trend.ts';
import { connect, type Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import { PARAM_NAMES } from '../../src/prebid/params.ts';
import { startTestServer } from '../helpers/server.ts';

interface Answer {
  status: number;
  body: string;
}

/** One keep-alive raw connection; requests in sequence; reconnects when the server closes. */
class RawClient {
  private sock: Socket | null = null;
  private buf = Buffer.alloc(0);
  private waiting: ((a: Answer | null) => void) | null = null;
  constructor(private readonly port: number) {}

  private open(): Promise<Socket> {
    return new Promise((resolve, reject) => {
      const s = connect(this.port, '127.0.0.1', () => resolve(s));
      s.on('data', (d) => {
        this.buf = Buffer.concat([this.buf, d]);
        this.parse();
      });
      s.on('close', () => {
        // Only this socket's own request: an old socket may close after a new one took over.
        if (this.sock !== s) return;
        this.sock = null;
        const w = this.waiting;
        this.waiting = null;
        w?.(null); // closed without an answer
      });
      s.on('error', (e) => (this.sock === s ? undefined : reject(e)));
    });
  }

  private parse(): void {
    const head = this.buf.indexOf('\r\n\r\n');
    if (head < 0 || !this.waiting) return;
    const header = this.buf.subarray(0, head).toString('latin1');
    const len = Number(/content-length: *(\d+)/i.exec(header)?.[1] ?? 0);
    if (this.buf.length < head + 4 + len) return;
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(header)?.[1] ?? 0);
    const body = this.buf.subarray(head + 4, head + 4 + len).toString('utf8');
    this.buf = this.buf.subarray(head + 4 + len);
    const w = this.waiting;
    this.waiting = null;
    w({ status, body });
  }

  send(target: Buffer): Promise<Answer | null> {
    return this.sendRaw(Buffer.concat([Buffer.from('GET ', 'latin1'), target, Buffer.from(' HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', 'latin1')]));
  }

  /** Sends one whole HTTP request as given. */
  async sendRaw(request: Buffer): Promise<Answer | null> {
    if (this.sock === null) {
      this.buf = Buffer.alloc(0);
      this.sock = await this.open();
    }
    const sock = this.sock;
    return new Promise((resolve) => {
      // A raw CR or LF can leave the HTTP parser waiting for more: give up and reconnect.
      const timer = setTimeout(() => {
        this.waiting = null;
        if (this.sock === sock) this.sock = null;
        sock.destroy();
        resolve(null);
      }, 1000);
      this.waiting = (a) => {
        clearTimeout(timer);
        resolve(a);
      };
      sock.write(request);
    });
  }

  close(): void {
    this.sock?.destroy();
  }
}

// Control bytes and space cannot appear raw in a request target (RFC 9112): uWS does not
// answer such a request at all (checked: it waits for a request line that never ends), so
// ivtd never sees it. They are sent once, in parallel; the rule there is only that the
// process survives and that whatever is answered is JSON.
const HTTP_LAYER = (b: number) => b <= 0x20;

/** Sends one request on a fresh connection; null when nothing comes back within `ms`. */
function once(port: number, target: Buffer, ms: number): Promise<Answer | null> {
  return onceRaw(port, [Buffer.concat([Buffer.from('GET '), target, Buffer.from(' HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')])], ms);
}

/**
 * Writes `parts` on a fresh connection, `gapMs` apart, then closes the writing side when
 * `endAfter`; the first answer, or null when none comes within `ms`.
 */
function onceRaw(port: number, parts: Buffer[], ms: number, opts: { gapMs?: number; endAfter?: boolean } = {}): Promise<Answer | null> {
  return new Promise((resolve) => {
    const sock = connect(port, '127.0.0.1', async () => {
      for (const p of parts) {
        if (sock.destroyed) return;
        sock.write(p);
        if (opts.gapMs) await new Promise((r) => setTimeout(r, opts.gapMs));
      }
      if (opts.endAfter && !sock.destroyed) sock.end();
    });
    let buf = Buffer.alloc(0);
    const done = (a: Answer | null) => {
      clearTimeout(timer);
      sock.destroy();
      resolve(a);
    };
    const timer = setTimeout(() => done(null), ms);
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      const head = buf.indexOf('\r\n\r\n');
      if (head < 0) return;
      const header = buf.subarray(0, head).toString('latin1');
      const len = Number(/content-length: *(\d+)/i.exec(header)?.[1] ?? 0);
      if (buf.length >= head + 4 + len) done({ status: Number(header.slice(9, 12)), body: buf.subarray(head + 4, head + 4 + len).toString() });
    });
    sock.on('error', () => done(null));
    sock.on('close', () => done(null));
  });
}

/** Counts the answer's status; true when it is a 200 or a JSON 4xx with {error, message}. */
function tally(a: Answer, statuses: Map<number, number>): boolean {
  statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
  if (a.status === 200) return true;
  let body: { error?: unknown; message?: unknown } = {};
  try {
    body = JSON.parse(a.body) as typeof body;
  } catch {
    return false;
  }
  return a.status >= 400 && a.status <= 499 && typeof body.error === 'string' && typeof body.message === 'string';
}

let seed = 0x5eed;
function rnd(n: number): number {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
  return (seed >>> 8) % n;
}

t.test('hostile lookups: no crash, only 200 or JSON 4xx, memory flat', async (t) => {
  // A small budget: its shared tables are written all over in the first pass, so what the
  // later passes show is the rest of the process.
  const srv = await startTestServer({ threads: 2, memoryBudget: 32 });
  t.teardown(() => srv.stop());
  const ua = encodeURIComponent('Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36');
  const base: Record<string, string> = {
    p: srv.customer.partner_id, k: srv.customer.prebid_key, pub: 'pub-1', node: 'n', ip: '73.162.10.20', ua, uid: 'u-1',
    sid: 'ex.example', adt: '1', dvt: '2', schain: '1.0,1!exchange1.example,1234,1',
  };
  const target = (params: Array<[string, Buffer | string]>) =>
    Buffer.concat([Buffer.from('/api/v1/ivt/lookup?'), ...params.flatMap(([k, v], i) => [Buffer.from(`${i ? '&' : ''}${k}=`, 'latin1'), Buffer.isBuffer(v) ? v : Buffer.from(v, 'latin1')])]);
  const withParam = (name: string, value: Buffer | string) => target([...Object.entries(base).filter(([k]) => k !== name), [name, value]]);

  const cases: Array<{ target: Buffer; rawByte?: number; what: string }> = [];
  const names = [...PARAM_NAMES, 'rid', 'x'];
  for (const name of names) {
    for (let b = 0; b < 256; b++) {
      cases.push({ target: withParam(name, Buffer.from([0x61, b, 0x62])), rawByte: b, what: `${name} raw 0x${b.toString(16)}` });
      cases.push({ target: withParam(name, `a%${b.toString(16).padStart(2, '0').toUpperCase()}b`), what: `${name} %${b.toString(16)}` });
    }
    for (const v of ['%00', '%FF', '%C0%AF', '%E0%80%AF', '%F0%80%80%AF', '%ED%A0%80', '%E2%82', '%', '%G1', '%%', '+', '', '%2', '\u00e9'.repeat(3)]) {
      cases.push({ target: withParam(name, v), what: `${name}=${v}` });
    }
    cases.push({ target: target([...Object.entries(base), [name, 'dup']]), what: `${name} duplicated` });
    cases.push({ target: withParam(name, 'x'.repeat(7000)), what: `${name} 7000 chars` });
  }
  for (const ip of ['fe80::1%25eth0', 'fe80::1%eth0', '::ffff:1.2.3.4', '::ffff:999.1.1.1', '1.2.3.04', '::', '::1', '1.2.3', '1.2.3.4.5', '2001:db8::1::1', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', '1.2.3.4%2F24', '[::1]', '%201.2.3.4']) {
    cases.push({ target: withParam('ip', ip), what: `ip=${ip}` });
  }
  cases.push({ target: withParam('uid', 'u'.repeat(8000)), what: '8000-char uid' });
  cases.push({ target: withParam('k', 'k'.repeat(300)), what: '300-char k' });
  cases.push({ target: withParam('k', 'k'.repeat(257)), what: '257-char k' });
  cases.push({ target: Buffer.from(`/api/v1/ivt/lookup?&&&=&p&k&${Object.entries(base).map(([k, v]) => `${k}=${v}`).join('&')}`), what: 'empty pairs' });
  cases.push({ target: Buffer.from('/api/v1/ivt/lookup?' + '&'.repeat(7000)), what: 'only separators' });
  cases.push({ target: Buffer.from('/api/v1/ivt/lookup'), what: 'no query' });
  // Random mixtures: several parameters at once, random bytes, random encodings.
  for (let i = 0; i < 3000; i++) {
    const params: Array<[string, Buffer | string]> = Object.entries(base).filter(() => rnd(8) !== 0);
    for (let j = rnd(4); j > 0; j--) {
      const name = names[rnd(names.length)]!;
      const bytes = Buffer.from(Array.from({ length: 1 + rnd(40) }, () => (rnd(3) === 0 ? 0x25 : 0x21 + rnd(0x5e))));
      params.push([name, bytes]);
    }
    cases.push({ target: target(params.sort(() => rnd(3) - 1)), what: `random #${i}` });
  }

  const client = new RawClient(srv.server.ports.prebid);
  t.teardown(() => client.close());
  const bad: string[] = [];
  const statuses = new Map<number, number>();

  // The HTTP layer's share, all at once.
  const httpLayer = cases.filter((c) => c.rawByte !== undefined && HTTP_LAYER(c.rawByte));
  const strict = cases.filter((c) => !(c.rawByte !== undefined && HTTP_LAYER(c.rawByte)));
  let unanswered = 0;
  for (let i = 0; i < httpLayer.length; i += 200) {
    const answers = await Promise.all(httpLayer.slice(i, i + 200).map((c) => once(srv.server.ports.prebid, c.target, 1000)));
    answers.forEach((a, j) => {
      if (a === null) unanswered++;
      else if (!a.body.startsWith('{"error"') && a.status !== 200) bad.push(`${httpLayer[i + j]!.what}: ${a.status} ${a.body.slice(0, 60)}`);
    });
  }

  const trend = new MemoryTrend(2000, () => srv.server.lookups.collectGarbage());
  const run = async () => {
    for (const c of strict) {
      await trend.tick();
      const a = await client.send(c.target);
      if (a === null) {
        bad.push(`${c.what}: no answer`);
        continue;
      }
      if (!tally(a, statuses)) bad.push(`${c.what}: ${a.status} ${a.body.slice(0, 80)}`);
    }
  };

  // The first pass touches pages of the shared tables for the first time (they are allocated
  // at full size but the OS maps pages as they are written); later passes repeat its keys.
  for (let pass = 0; pass < 6; pass++) {
    trend.sampling = pass > 0;
    await run();
  }
  const perRequest = trend.bytesPerRequest();
  t.comment(`RSS over the last five passes: ${trend.samples} samples, ${trend.range()}, means ${trend.means(10)}, trend ${Math.round(perRequest)} bytes per request`);

  t.comment(`${cases.length} cases: ${strict.length} run 6 times (answers ${JSON.stringify(Object.fromEntries(statuses))}), ${httpLayer.length} with raw control bytes sent once (${unanswered} not answered by the HTTP layer)`);
  t.same(bad.slice(0, 20), [], 'every answer is 200 or a JSON 4xx naming the error');
  t.ok(cases.length > 15_000, `a corpus worth the name (${cases.length})`);
  t.ok((statuses.get(200) ?? 0) > 1000 && (statuses.get(400) ?? 0) > 1000, 'both accepted and refused requests reached the lookup');
  t.equal((await fetch(`${srv.prebid}/health-check`)).status, 200, 'still healthy');
  t.equal(srv.server.lookups.liveThreads, 2, 'no lookup thread was lost');
  // A leak of 1 KB per request would show as ~1000; GC swings average out over the samples.
  t.ok(trend.samples >= 30, `enough samples for a trend (${trend.samples})`);
  t.ok(perRequest < 400, `memory flat across repeats: ${Math.round(perRequest)} bytes per request over ${5 * strict.length} requests`);
});

t.test('hostile OpenRTB bodies over raw sockets: no crash, only 200 or JSON 4xx, memory flat', async (t) => {
  const srv = await startTestServer({ threads: 2, memoryBudget: 32 });
  t.teardown(() => srv.stop());
  const port = srv.server.ports.prebid;
  const path = `/api/v1/ivt/ortb?p=${srv.customer.partner_id}&k=${srv.customer.prebid_key}&node=n`;
  const bid = {
    id: 'r-1', imp: [{ id: '1', banner: { w: 300, h: 250 } }],
    site: { domain: 'news.example', page: 'https://news.example/a', publisher: { id: 'pub-1' } },
    device: {
      ua: 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
      ip: '73.162.10.20', devicetype: 2, geo: { country: 'USA' },
      sua: { platform: { brand: 'Windows' }, browsers: [{ brand: 'Google Chrome', version: ['124'] }], mobile: 0, source: 2 },
    },
    user: { id: 'u-1' },
    source: { schain: { ver: '1.0', complete: 1, nodes: [{ asi: 'exchange1.example', sid: '1234', hp: 1 }] } },
  };
  const good = Buffer.from(JSON.stringify(bid));
  const head = (len: number | string | null, extra = '') =>
    Buffer.from(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${len === null ? '' : `Content-Length: ${len}\r\n`}${extra}\r\n`, 'latin1');
  const post = (body: Buffer, extra = '') => Buffer.concat([head(body.length, extra), body]);
  const chunked = (body: Buffer, size: number) => {
    const parts: Buffer[] = [head(null, 'Transfer-Encoding: chunked\r\n')];
    for (let i = 0; i < body.length; i += size) {
      const c = body.subarray(i, i + size);
      parts.push(Buffer.from(`${c.length.toString(16)}\r\n`), c, Buffer.from('\r\n'));
    }
    parts.push(Buffer.from('0\r\n\r\n'));
    return Buffer.concat(parts);
  };

  // Mutations of a good bid request: bytes flipped, cut, repeated, keys duplicated or
  // renamed to prototype names, values retyped, gzip of each of those and of garbage.
  const cases: Array<{ request: Buffer; what: string }> = [];
  const text = good.toString();
  for (let i = 0; i < 1500; i++) {
    const b = Buffer.from(good);
    const kind = rnd(6);
    let body: Buffer;
    if (kind === 0) {
      for (let j = 1 + rnd(4); j > 0; j--) b[rnd(b.length)] = rnd(256);
      body = b;
    } else if (kind === 1) body = b.subarray(0, rnd(b.length));
    else if (kind === 2) {
      const at = rnd(text.length);
      body = Buffer.from(text.slice(0, at) + text.slice(rnd(text.length)));
    } else if (kind === 3) {
      const keys = ['id', 'ua', 'ip', 'devicetype', 'country', 'schain', 'nodes', 'imp', 'publisher', 'sua', 'browsers', 'version'];
      const key = keys[rnd(keys.length)]!;
      const to = ['__proto__', 'constructor', 'prototype', key, 'x'][rnd(5)]!;
      // Renaming to itself duplicates the key where it is a sibling of another copy.
      body = Buffer.from(text.replace(`"${key}":`, to === key ? `"${key}":1,"${key}":` : `"${to}":`));
    } else if (kind === 4) {
      const values = ['null', '0', '-1', '1e308', '"x"', '[]', '{}', 'true', '[[[[[[[[]]]]]]]]', `"${'z'.repeat(9000)}"`];
      const targets = [/"r-1"/, /"73\.162\.10\.20"/, /"devicetype":2/, /"USA"/, /"1\.0"/, /"hp":1/, /"124"/, /"mobile":0/, /\[\{"id":"1"/];
      const m = targets[rnd(targets.length)]!;
      body = Buffer.from(text.replace(m, (s) => (s.includes(':') ? s.slice(0, s.indexOf(':') + 1) : '') + values[rnd(values.length)]!));
    } else body = Buffer.from(Array.from({ length: rnd(200) }, () => rnd(256)));
    const gz = rnd(4) === 0;
    cases.push({ request: gz ? post(gzipSync(body), 'Content-Encoding: gzip\r\n') : post(body), what: `mutation #${i} (kind ${kind}${gz ? ', gzip' : ''})` });
  }
  cases.push({ request: post(gzipSync(good).subarray(0, 20), 'Content-Encoding: gzip\r\n'), what: 'truncated gzip' });
  cases.push({ request: post(Buffer.from('x'.repeat(100)), 'Content-Encoding: gzip\r\n'), what: 'gzip header on plain text' });
  cases.push({ request: post(good, 'Content-Encoding: br\r\n'), what: 'brotli' });
  cases.push({ request: post(good, 'Content-Encoding: gzip, gzip\r\n'), what: 'gzip twice declared' });
  cases.push({ request: post(gzipSync(gzipSync(good)), 'Content-Encoding: gzip\r\n'), what: 'gzip of gzip, declared once' });
  cases.push({ request: post(gzipSync(Buffer.alloc(30 << 20, 0x7b)), 'Content-Encoding: gzip\r\n'), what: 'gzip bomb of braces' });
  cases.push({ request: post(Buffer.from('[' + '{"a":'.repeat(60_000))), what: 'deep nesting near the size limit' });
  cases.push({ request: post(Buffer.from(`{"id":"x","imp":[${'0,'.repeat(30_000)}0]}`)), what: '30k-element array' });
  cases.push({ request: post(Buffer.from(`{${Array.from({ length: 3000 }, (_, i) => `"k${i}":0`).join(',')}}`)), what: '3000 keys' });
  cases.push({ request: post(Buffer.from(`{"id":"${'\\u0041'.repeat(10_000)}"}`)), what: 'escape-heavy string' });
  cases.push({ request: post(good, 'Content-Type: application/json; charset=latin1\r\n'.replace('Content-Type', 'X-Dup-Type')), what: 'extra header' });
  cases.push({ request: post(Buffer.from('{"id":"a"}'), ''), what: 'BidRequest without a device' });
  cases.push({ request: chunked(good, 37), what: 'chunked body' });
  cases.push({ request: chunked(Buffer.from(`{"id":"${'a'.repeat(70_000)}"}`), 8192), what: 'chunked body over the limit' });
  cases.push({ request: Buffer.concat([head(10), Buffer.from('{"id":"a"}')]), what: 'exact short body' });
  cases.push({ request: Buffer.concat([head(0)]), what: 'Content-Length 0' });
  cases.push({ request: Buffer.concat([head(5), good]), what: 'Content-Length shorter than the body' });
  cases.push({ request: Buffer.concat([head('99999999999999999999'), good]), what: 'absurd Content-Length' });
  cases.push({ request: Buffer.concat([head(`${good.length}, ${good.length}`), good]), what: 'listed Content-Length' });

  const bad: string[] = [];
  const statuses = new Map<number, number>();
  const client = new RawClient(port);
  t.teardown(() => client.close());
  const trend = new MemoryTrend(150, () => srv.server.lookups.collectGarbage());
  const run = async () => {
    for (const c of cases) {
      await trend.tick();
      const a = await client.sendRaw(c.request);
      if (a === null) continue; // the HTTP layer may close on framing it refuses; checked below that it is rare
      if (!tally(a, statuses)) bad.push(`${c.what}: ${a.status} ${a.body.slice(0, 80)}`);
    }
  };

  // Bodies that stop half-way, arrive a few bytes at a time, or lie about their length.
  const slow = await onceRaw(port, [head(good.length), ...Array.from({ length: Math.ceil(good.length / 64) }, (_, i) => good.subarray(i * 64, i * 64 + 64))], 5000, { gapMs: 2 });
  t.equal(slow?.status, 200, 'a body that arrives 64 bytes at a time is read whole');
  for (let i = 0; i < 50; i++) {
    // Announced, then only part sent and the connection dropped: nothing to answer, nothing kept.
    await onceRaw(port, [head(good.length), good.subarray(0, rnd(good.length))], 50, { endAfter: true });
  }
  const over = await onceRaw(port, [head(999_999_999), Buffer.alloc(64 * 1024, 0x20)], 2000);
  t.equal(over?.status, 413, 'a 1 GB Content-Length is refused before its body is read');
  // Ten digits or more: uWS v20.30 closes the connection itself, before ivtd sees the request.
  t.equal(await onceRaw(port, [head(2 ** 31), good], 2000), null, 'a 2 GB Content-Length: the connection is closed unanswered');

  let answered = 0;
  for (let pass = 0; pass < 4; pass++) {
    const before = [...statuses.values()].reduce((a, b) => a + b, 0);
    trend.sampling = pass > 0;
    await run();
    answered = [...statuses.values()].reduce((a, b) => a + b, 0) - before;
  }
  // RSS on a busy host moves by a few MB either way over these ~4 500 requests (−4 to +2 KB
  // per request measured without any leak): a slope near the bound is measured again over
  // three more passes, where a real leak stays above it and noise averages out.
  let passes = 4;
  if (!(trend.bytesPerRequest() < 2048)) {
    for (; passes < 7; passes++) await run();
  }
  const perRequest = trend.bytesPerRequest();
  const heapPerRequest = trend.heapBytesPerRequest();
  t.comment(`ORTB: ${cases.length} cases, ${passes} passes; answers ${JSON.stringify(Object.fromEntries(statuses))}; RSS over the last three: ${trend.samples} samples, ${trend.range()}, means ${trend.means(10)}, trend ${Math.round(perRequest)} bytes per request; lookup threads' V8 heaps ${Math.round(heapPerRequest)} bytes per request`);
  t.same(bad.slice(0, 20), [], 'every answer is 200 or a JSON 4xx naming the error');
  t.ok(answered > cases.length * 0.95, `nearly every case answered (${answered} of ${cases.length} in the last pass)`);
  t.ok((statuses.get(200) ?? 0) > 100 && (statuses.get(400) ?? 0) > 500, 'both accepted and refused bid requests reached the lookup');
  t.ok((statuses.get(413) ?? 0) >= 4, 'the size limits were hit');
  t.equal((await fetch(`${srv.prebid}/health-check`)).status, 200, 'still healthy');
  t.equal(srv.server.lookups.liveThreads, 2, 'no lookup thread was lost');
  // A few of these bodies are up to 64 KB, most under 1 KB: the RSS slope catches what keeps
  // kilobytes per request, not each small body (every body kept read −2 916 bytes per
  // request: tried).
  t.ok(trend.samples >= 20, `enough samples for a trend (${trend.samples})`);
  t.ok(perRequest < 2048, `memory flat across repeats: ${Math.round(perRequest)} bytes per request over ${(passes - 1) * cases.length} requests`);
  // The lookup threads' V8 heaps after full collections are printed beside it (in the
  // comment above), not asserted: about 180 bytes per request standalone, also with the host
  // loaded, and 920 with each accepted body's parsed request kept (tried), but 1 444 in one
  // run of the whole suite in CI without any leak: no bound separates the two there.
});
