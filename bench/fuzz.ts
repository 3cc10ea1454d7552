// Fuzz campaign against a running ivtd: random and mutated requests, correctly framed, on
// every port at once over many keep-alive connections, for a count or a duration.
//   prebid   GET lookups (valid queries mutated: names, values, escapes, schains, IPs, UAs,
//            keys, sizes past 8 KB), POST OpenRTB bodies built from the third-party fixtures
//            (test/fixtures/ortb) mutated as JSON and as bytes, sent plain, gzip'd (truthfully
//            or not) and chunked, beacons with genuine, forged and garbled lids and forged
//            X-Device-* / X-Forwarded-For headers, health checks, other paths and methods;
//   api      login and refresh with garbage forms and JSON, the account, project, policy,
//            explain and feedback calls with garbage parameters, bodies and Authorization
//            headers (and a genuine token part of the time), the dashboard's files;
//   report   the reporting API with garbage dates, dimensions, filters and Basic auth;
//   metrics  GET /metrics.
// Prints the statuses by route, the count of 5xx and of requests left unanswered (the
// connection closed or 15 s passed without an answer: targets 0 and 0), whether the process
// lived, and its RSS after each third of the run (target: the last third adds nothing).
//   node --import tsx bench/fuzz.ts [--requests 100000 | --seconds 180] [--connections 64]
//        [--seed N] [--threads 2] [--ivtd PATH | --checkout DIR]
// Without --ivtd it runs dist/ivtd when built, else this checkout through tsx (npm start's way).
import { connect, type Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { numArg, ROOT, rssMb, stopProcess } from './processes.ts';
import { chooseTarget, startServer, type Server } from './hostile-server.ts';

const SEED = numArg('seed', (Math.random() * 0x7fffffff) | 0);
const SECONDS = numArg('seconds', 0);
const REQUESTS = numArg('requests', SECONDS > 0 ? Number.MAX_SAFE_INTEGER : 100_000);
const CONNECTIONS = numArg('connections', 64);
const THREADS = numArg('threads', 2);
const ANSWER_MS = 15_000;

// ---- seeded randomness (mulberry32) ------------------------------------------------------
let rs = SEED >>> 0;
function rand(): number {
  rs = (rs + 0x6d2b79f5) >>> 0;
  let x = rs;
  x = Math.imul(x ^ (x >>> 15), x | 1);
  x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
  return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
}
const int = (n: number) => Math.floor(rand() * n);
const chance = (p: number) => rand() < p;
const pick = <T>(a: readonly T[]): T => a[int(a.length)]!;

// ---- what to send --------------------------------------------------------------------------
interface Req {
  route: string;
  port: number;
  method: string;
  target: string;
  headers: [string, string][];
  body?: Buffer;
  chunked?: boolean;
}

const UAS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.6778.104 Mobile Safari/537.36',
  'Roku/DVP-14.0 (14.0.4.5142-46)', 'okhttp/4.12.0', 'curl/8.5.0', 'Googlebot/2.1 (+http://www.google.com/bot.html)',
  'python-requests/2.31.0', '', 'Mozilla/5.0 (compatible; MSIE 6.0)', 'Dalvik/2.1.0 (Linux; U; Android 12; SM-T220 Build/SP1A.210812.016)',
];
const IPS = ['81.2.69.142', '203.0.113.7', '10.0.0.1', '127.0.0.1', '8.8.8.8', '2001:db8::1', '::ffff:1.2.3.4', '::1', '35.191.0.1', '52.94.0.1', '0.0.0.0', '255.255.255.255', 'fe80::1%eth0', '1.2.3', '01.2.3.4', '999.1.1.1', '1:2:3:4:5:6:7:8:9', 'localhost', ''];
const SCHAINS = ['1.0,1!exchange1.example,1234,1', '1.0,1!a.com,1,1!b.com,2,0,r,n,d', '1.0%2C1%21x.com%2C1%2C1', '1.0,0!', '1.0,1!,,', '9.9,1!a,b,2', '1.0,1!a%ZZ,1,1', '1.0,1' + '!a.com,1,1'.repeat(25)];
const NOISE = ['%', '%0', '%zz', '%00', '%FF', '%C3%A9', '%E2%82', '+', '=', '#', '@', ';', '&', '&&', '==', 'é', '\u0001', '\u007f', '%2B', '%25', 'A', 'Z', ' ', '😀', '%ED%A0%80', '\\', '"', "'", '<script>', '../', '\t'];
const RANDOM_PATHS = ['/', '/api', '/api/v1', '/api/v1/ivt', '/api/v1/ivt/LOOKUP', '/api/v1/ivt/lookup/', '//api/v1/ivt/lookup', '/api/v1/ivt/lookup%2F', '/%2e%2e/etc/passwd', '/health-check/x', '/favicon.ico', '/metrics', '/v1/report', '/login'];

/** `s` mutated 1-4 times: characters deleted, inserted (from NOISE), a slice doubled, a case flipped, cut short. */
function mutate(s: string): string {
  let out = s;
  for (let n = 1 + int(4); n > 0; n--) {
    const at = out.length === 0 ? 0 : int(out.length);
    switch (int(6)) {
      case 0: out = out.slice(0, at) + out.slice(at + 1 + int(8)); break;
      case 1: out = out.slice(0, at) + pick(NOISE) + out.slice(at); break;
      case 2: out = out.slice(0, at) + out.slice(at, at + int(40)) + out.slice(at); break;
      case 3: out = out.slice(0, at) + out.slice(at, at + 1).toUpperCase() + out.slice(at + 1); break;
      case 4: out = out.slice(0, at); break;
      default: out = out.slice(0, at) + String.fromCharCode(32 + int(95)) + out.slice(at + 1); break;
    }
  }
  return out;
}

/**
 * A request target must hold no space and no control character (RFC 9112 3.2: the request
 * line's framing): those are escaped, anything else goes raw (bytes past ASCII among them).
 * The few requests that break this on purpose are the route "prebid malformed request".
 */
const framed = (target: string) => target.replace(/[\x00-\x20\x7f]/g, (c) => encodeURIComponent(c));
/** A header value must hold no CR or LF; the prebid port's values are kept printable. */
const headerValue = (v: string) => v.replace(/[\x00-\x08\x0a-\x1f\x7f]/g, '');

const GZIP_BOMB = gzipSync(Buffer.alloc(5_000_000, 0x20));

class Corpus {
  lids: string[] = [];
  tokens: string[] = [];
  readonly bodies: string[];
  constructor(readonly s: Server) {
    const dir = join(ROOT, 'test/fixtures/ortb');
    this.bodies = ['exemplary', 'supplemental'].flatMap((k) => readdirSync(join(dir, k)).sort().map((f) => JSON.stringify((JSON.parse(readFileSync(join(dir, k, f), 'utf8')) as { request: unknown }).request)));
  }

  auth(): string {
    const c = this.s.creds;
    return chance(0.85) ? `p=${c.partner}&k=${c.key}` : pick([`p=${c.partner}&k=wrong`, `p=not-a-uuid&k=${c.key}`, `k=${c.key}`, `p=${c.partner.toUpperCase()}&k=${c.key}`, '']);
  }

  lookupQuery(): string {
    const parts = [
      chance(0.7) ? `schain=${chance(0.8) ? SCHAINS[0] : pick(SCHAINS)}` : '',
      this.auth(),
      `pub=pub-${int(50)}`, `node=bidder-${int(3)}`, `ip=${encodeURIComponent(chance(0.7) ? `81.2.${int(256)}.${int(256)}` : pick(IPS))}`,
      `ua=${encodeURIComponent(pick(UAS))}`, `uid=u-${int(5000)}`, `sid=exchange1.example`, `adt=${int(6)}`, `dvt=${pick([1, 2, 2, 2, 3, 4, 5, 6, 7, 9])}`,
      chance(0.3) ? `ifa=6d92078a-8246-4ba4-ae5b-${(100000000000 + int(900000000000)).toString()}` : '',
      chance(0.3) ? `app=com.example.app${int(20)}` : '',
      chance(0.2) ? `geo=${pick(['US', 'GB', 'us', 'XX', 'USA', ''])}` : '',
      chance(0.2) ? `p1=${int(10)}&p2=x&cb=${int(1e9)}` : '',
      chance(0.05) ? `dim=${pick(['300x250', 'x', '0x0', '99999999x1'])}` : '',
      chance(0.03) ? `cb=${'x'.repeat(int(9000))}` : '', // past 8 KB: 413
      chance(0.1) ? `rid=${int(1e6)}` : '',
    ].filter((x) => x !== '');
    if (chance(0.2)) parts.sort(() => rand() - 0.5);
    let q = parts.join('&');
    if (chance(0.5)) q = mutate(q);
    return q;
  }

  lookup(): Req {
    return { route: 'prebid GET lookup', port: this.s.ports.prebid, method: 'GET', target: framed(`/api/v1/ivt/lookup?${this.lookupQuery()}`), headers: [] };
  }

  ortbBody(): Buffer {
    const doc = JSON.parse(pick(this.bodies)) as Record<string, unknown>;
    // JSON-level changes where the mapping reads, then perhaps bytes.
    const device = (doc.device ?? (doc.device = {})) as Record<string, unknown>;
    if (chance(0.5)) device.ip = chance(0.6) ? `81.2.${int(256)}.${int(256)}` : pick<unknown>([...IPS, 5, null, [], {}]);
    if (chance(0.3)) device.ua = pick<unknown>([...UAS, 7, null, { a: 1 }]);
    if (chance(0.2)) device.devicetype = pick<unknown>([1, 2, 3, 4, 5, 6, 7, 99, -1, '2', 2.5, null]);
    if (chance(0.2)) doc.source = { schain: pick<unknown>([{ ver: '1.0', complete: 1, nodes: [{ asi: 'a.com', sid: '1', hp: 1 }] }, { ver: 1, nodes: 'x' }, [], 'str', { ver: '1.0', complete: 1, nodes: new Array(30).fill({ asi: 'a', sid: 'b', hp: 1 }) }]) };
    if (chance(0.1)) doc.imp = pick<unknown>([[], null, 'x', new Array(1200).fill({ id: '1' })]);
    if (chance(0.05)) doc.ext = JSON.parse('['.repeat(40) + ']'.repeat(40)) as unknown; // past the nesting limit
    if (chance(0.05)) doc.__proto__x = 1;
    let text = JSON.stringify(doc);
    if (chance(0.05)) text = text.replace('{', '{"id":"dup",'); // a duplicate key
    if (chance(0.3)) text = mutate(text);
    if (chance(0.02)) text = text + ' '.repeat(70_000); // past the body limit: 413
    return Buffer.from(text);
  }

  ortb(): Req {
    let body = this.ortbBody();
    const headers: [string, string][] = [['Content-Type', chance(0.9) ? 'application/json' : pick(['text/plain', 'application/json; charset=utf-8', 'application/x-www-form-urlencoded', '', 'application/JSON'])]];
    let route = 'prebid POST ortb';
    const how = rand();
    if (how < 0.2) {
      body = gzipSync(body);
      headers.push(['Content-Encoding', 'gzip']);
      route += ' gzip';
    } else if (how < 0.23) {
      headers.push(['Content-Encoding', 'gzip']); // claims gzip, is not
      route += ' gzip';
    } else if (how < 0.25) {
      body = GZIP_BOMB; // small on the wire, 5 MB inflated
      headers.push(['Content-Encoding', 'gzip']);
      route += ' gzip';
    } else if (how < 0.27) {
      body = gzipSync(body).subarray(0, int(body.length)); // cut short
      headers.push(['Content-Encoding', pick(['gzip', 'br', 'deflate', 'gzip, gzip'])]);
      route += ' gzip';
    }
    const chunked = chance(0.25);
    if (chunked) route += ' chunked';
    return { route, port: this.s.ports.prebid, method: 'POST', target: framed(`/api/v1/ivt/ortb?${chance(0.9) ? this.auth() : mutate(this.auth())}&node=n${int(3)}`), headers, body, chunked };
  }

  beacon(): Req {
    let lid: string;
    const r = rand();
    if (this.lids.length > 0 && r < 0.5) lid = pick(this.lids); // genuine (a replay after its first)
    else if (this.lids.length > 0 && r < 0.75) {
      // garbled: one character changed, or cut, or doubled
      const l = pick(this.lids);
      const at = int(l.length);
      lid = chance(0.6) ? l.slice(0, at) + pick([...'AQgw-_9z']) + l.slice(at + 1) : chance(0.5) ? l.slice(0, at) : l + l.slice(0, int(10));
    } else lid = Array.from({ length: chance(0.8) ? 107 : int(200) }, () => pick([...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'])).join(''); // forged
    const headers: [string, string][] = [];
    if (chance(0.5)) headers.push(['X-Device-Ip', headerValue(chance(0.7) ? `81.2.${int(256)}.${int(256)}` : mutate(pick(IPS)))]);
    if (chance(0.5)) headers.push(['X-Device-User-Agent', headerValue(chance(0.8) ? pick(UAS) : mutate(pick(UAS)))]);
    if (chance(0.5)) headers.push(['X-Forwarded-For', headerValue(Array.from({ length: 1 + int(5) }, () => (chance(0.8) ? pick(IPS) : mutate(pick(IPS)))).join(pick([', ', ',', ' , '])))]);
    if (chance(0.3)) headers.push(['User-Agent', headerValue(pick(UAS))]);
    let q = `lid=${lid}${chance(0.3) ? '&fmt=gif' : ''}`;
    if (chance(0.2)) q = mutate(q);
    const post = chance(0.15);
    return { route: `prebid ${post ? 'POST' : 'GET'} imp`, port: this.s.ports.prebid, method: post ? 'POST' : 'GET', target: framed(`/api/v1/ivt/imp?${q}`), headers, body: post ? Buffer.from(chance(0.5) ? '' : mutate('{"x":1}')) : undefined };
  }

  /** A control character (or a space) raw in the request line or a header value: not HTTP; an answer (400) or a close are both fair. */
  malformed(): Req {
    const t = `/api/v1/ivt/lookup?${this.lookupQuery()}`;
    const at = int(t.length);
    const bad = pick(['\t', '\u0001', '\u0000', '\u007f', ' x']);
    // In the request line, or in a header's value (RFC 9110 5.5: no control but HTAB there).
    return chance(0.5)
      ? { route: 'prebid malformed request', port: this.s.ports.prebid, method: 'GET', target: t.slice(0, at) + bad + t.slice(at), headers: [] }
      : { route: 'prebid malformed request', port: this.s.ports.prebid, method: 'GET', target: framed(t), headers: [[pick(['X-Forwarded-For', 'X-Device-Ip', 'User-Agent']), `1.2.3.4${pick(['\u0001', '\u007f', '\u001b'])}`]] };
  }

  health(): Req {
    const method = pick(['GET', 'GET', 'HEAD', 'POST', 'DELETE']);
    return { route: `prebid ${method} health-check`, port: this.s.ports.prebid, method, target: chance(0.8) ? '/health-check' : framed(`/health-check?${mutate('x=1')}`), headers: [], body: method === 'POST' ? Buffer.from('x') : undefined };
  }

  strayPrebid(): Req {
    const method = pick(['GET', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'HEAD']);
    return { route: 'prebid other', port: this.s.ports.prebid, method, target: framed(pick(RANDOM_PATHS) + (chance(0.5) ? `?${this.lookupQuery()}` : '')), headers: [], body: method === 'POST' || method === 'PUT' ? this.ortbBody() : undefined };
  }

  authorization(): [string, string][] {
    const r = rand();
    if (r < 0.35 && this.tokens.length > 0) return [['Authorization', `Bearer ${pick(this.tokens)}`]];
    if (r < 0.5) return [];
    return [['Authorization', headerValue(pick(['Bearer ', 'Bearer x', 'bearer ' + 'a'.repeat(int(3000)), 'Basic Zm9vOmJhcg==', 'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.', `Bearer ${mutate(this.tokens[0] ?? 'x.y.z')}`, 'Token abc', mutate('Bearer abc.def.ghi')]))]];
  }

  api(): Req {
    const c = this.s.creds;
    const port = this.s.ports.api;
    const r = rand();
    const json = (v: unknown): Buffer => Buffer.from(chance(0.7) ? JSON.stringify(v) : mutate(JSON.stringify(v)));
    if (r < 0.12) {
      const form = chance(0.3) ? `username=${encodeURIComponent(c.username)}&password=${encodeURIComponent(chance(0.5) ? c.password : 'wrong')}` : mutate(`username=${c.username}&password=x&grant_type=password`);
      return { route: 'api POST /login', port, method: 'POST', target: '/login', headers: [['Content-Type', chance(0.8) ? 'application/x-www-form-urlencoded' : pick(['application/json', 'text/plain', 'multipart/form-data; boundary=x'])]], body: Buffer.from(form) };
    }
    if (r < 0.2) return { route: 'api POST /refresh_token', port, method: 'POST', target: '/refresh_token', headers: [['Content-Type', 'application/json']], body: json(pick<unknown>([{ refresh_token: mutate('abc') }, { refreshToken: 5 }, [], null, 'x', {}])) };
    if (r < 0.24) return { route: 'api POST /logout', port, method: 'POST', target: '/logout', headers: [['Content-Type', 'application/json'], ...this.authorization()], body: json({ refresh_token: 'x' }) };
    const auth = this.authorization();
    const calls: Array<() => Req> = [
      () => ({ route: 'api GET /v1/project/list', port, method: 'GET', target: framed(`/v1/project/list${chance(0.4) ? `?${mutate('limit=10&offset=0&search=a')}` : ''}`), headers: auth }),
      () => ({ route: 'api GET /v1/project/:id', port, method: 'GET', target: framed(`/v1/project/${chance(0.5) ? int(100) : mutate('00000000-0000-0000-0000-000000000000')}`), headers: auth }),
      () => ({ route: 'api POST /v1/project/create', port, method: 'POST', target: '/v1/project/create', headers: [['Content-Type', 'application/json'], ...auth], body: json(pick<unknown>([{ name: mutate('proj') }, { name: 'x'.repeat(5000) }, { name: 5 }, [], {}])) }),
      () => ({ route: 'api PATCH /v1/project/:id', port, method: 'PATCH', target: `/v1/project/${int(5)}`, headers: [['Content-Type', 'application/json'], ...auth], body: json({ name: mutate('p'), extra: [1, 2] }) }),
      () => ({ route: 'api GET /v1/account', port, method: 'GET', target: '/v1/account', headers: auth }),
      () => ({ route: 'api GET /v1/policy', port, method: 'GET', target: '/v1/policy', headers: auth }),
      () => ({ route: 'api POST /v1/policy/entries', port, method: 'POST', target: '/v1/policy/entries', headers: [['Content-Type', 'application/json'], ...auth], body: json(pick<unknown>([{ kind: 'ip', value: mutate('1.2.3.4') }, { entries: [{ kind: 'x' }] }, { kind: 'ua', value: '' }])) }),
      () => ({ route: 'api GET /v1/account/explain', port, method: 'GET', target: framed(`/v1/account/explain?${chance(0.5) ? this.lookupQuery() : mutate('lid=abc')}`), headers: auth }),
      () => ({ route: 'api POST /v1/feedback', port, method: 'POST', target: framed(`/v1/feedback${chance(0.3) ? `?${mutate('kind=ip')}` : ''}`), headers: [['Content-Type', pick(['text/csv', 'application/json', 'text/plain'])], ...auth], body: Buffer.from(mutate('ip,label\n1.2.3.4,bot\n5.6.7.8,human\n')) }),
      () => ({ route: 'api GET dashboard', port, method: 'GET', target: framed(pick(['/', '/dashboard-config.json', '/index.html', '/app.js', '/../../etc/passwd', `/${mutate('assets/x.js')}`])), headers: [] }),
      () => ({ route: 'api other', port, method: pick(['GET', 'POST', 'DELETE', 'PUT']), target: framed(`/${mutate('v1/project/list')}`), headers: auth, body: chance(0.5) ? Buffer.from(mutate('{"a":1}')) : undefined }),
    ];
    return pick(calls)();
  }

  report(): Req {
    const c = this.s.creds;
    const basic = (u: string, p: string) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;
    const r = rand();
    const headers: [string, string][] =
      r < 0.6 ? [['Authorization', basic(c.customer, c.reporting)]]
      : r < 0.7 ? []
      : [['Authorization', headerValue(pick([basic(c.customer, 'wrong'), basic('x', c.reporting), 'Basic', 'Basic !!!', `Basic ${Buffer.from(c.customer).toString('base64')}`, 'Bearer x', mutate(basic(c.customer, c.reporting))]))]];
    const day = () => pick(['2026-12-06', '2026-12-01', '2025-01-01', '2026-02-30', '2026-13-01', '20261206', 'today', '', '9999-12-31']);
    let q = [`start_date=${day()}`, `end_date=${day()}`, chance(0.6) ? `group_by=${Array.from({ length: int(5) }, () => pick(['date', 'hour', 'pub', 'sid', 'geo', 'dvt', 'os', 'browser', 'env', 'p1', 'nope', 'DATE'])).join(',')}` : '', chance(0.3) ? `limit=${pick(['0', '1', '1000', '1001', '-1', 'x', '1e3'])}` : '', chance(0.3) ? `offset=${pick(['0', '5', '-1', 'x', '99999999999'])}` : '', chance(0.4) ? `${pick(['pub', 'geo', 'dvt', 'os', 'bogus'])}=${pick(['pub-1', 'US,GB', '2', 'x'.repeat(300), ''])}` : ''].filter((x) => x !== '').join('&');
    if (chance(0.4)) q = mutate(q);
    const path = chance(0.85) ? '/v1/report' : pick(['/v1/report/impressions', '/v1/reports', '/']);
    return { route: `report GET ${path === '/v1/report' || path === '/v1/report/impressions' ? path : 'other'}`, port: this.s.ports.reporting, method: chance(0.95) ? 'GET' : 'POST', target: framed(`${path}?${q}`), headers };
  }

  metrics(): Req {
    return { route: 'metrics GET /metrics', port: this.s.ports.metrics, method: 'GET', target: '/metrics', headers: [] };
  }

  next(): Req {
    const r = rand();
    if (r < 0.45) return this.lookup();
    if (r < 0.6) return this.ortb();
    if (r < 0.75) return this.beacon();
    if (r < 0.77) return this.health();
    if (r < 0.795) return this.strayPrebid();
    if (r < 0.8) return this.malformed();
    if (r < 0.92) return this.api();
    if (r < 0.995) return this.report();
    return this.metrics();
  }
}

// ---- a raw keep-alive connection -----------------------------------------------------------
interface Answer {
  status: number;
  body: Buffer;
}

function wire(r: Req): Buffer {
  const head = [`${r.method} ${r.target} HTTP/1.1`, 'Host: 127.0.0.1', ...r.headers.map(([k, v]) => `${k}: ${v}`)];
  if (r.body !== undefined && r.chunked) head.push('Transfer-Encoding: chunked');
  else if (r.body !== undefined) head.push(`Content-Length: ${r.body.length}`);
  const parts: Buffer[] = [Buffer.from(head.join('\r\n') + '\r\n\r\n', 'utf8')];
  if (r.body !== undefined && r.chunked) {
    for (let at = 0; at < r.body.length; ) {
      const n = Math.min(r.body.length - at, 1 + int(4096));
      parts.push(Buffer.from(`${n.toString(16)}\r\n`), r.body.subarray(at, at + n), Buffer.from('\r\n'));
      at += n;
    }
    parts.push(Buffer.from('0\r\n\r\n'));
  } else if (r.body !== undefined) parts.push(r.body);
  return Buffer.concat(parts);
}

/** One connection to one port: one request at a time; reconnects when the server closes. */
class Conn {
  private sock: Socket | null = null;
  private buf = Buffer.alloc(0);
  /** The last answer said Connection: close. */
  private closing = false;
  private pending: { head: boolean; resolve: (a: Answer | null) => void; timer: NodeJS.Timeout } | null = null;

  constructor(private readonly port: number) {}

  private open(): Promise<Socket> {
    return new Promise((resolve) => {
      const s = connect(this.port, '127.0.0.1');
      s.setNoDelay(true);
      s.once('connect', () => resolve(s));
      s.on('data', (d) => {
        this.bytesSinceAnswer += d.length;
        this.buf = this.buf.length === 0 ? d : Buffer.concat([this.buf, d]);
        this.parse(false);
      });
      s.on('error', () => undefined); // (a close follows)
      s.on('close', () => {
        if (this.sock !== s) return;
        this.sock = null;
        this.parse(true);
        this.settle(null);
        this.buf = Buffer.alloc(0);
      });
      // A refused connect also closes: resolve so the caller sees it as unanswered.
      s.once('close', () => resolve(s));
    });
  }

  private settle(a: Answer | null): void {
    const p = this.pending;
    if (p === null) return;
    this.pending = null;
    clearTimeout(p.timer);
    if (a !== null) this.answeredHere++;
    p.resolve(a);
  }

  /** One whole answer from buf, if there is one (at `closed`, a body read to the end counts). */
  private parse(closed: boolean): void {
    const p = this.pending;
    if (p === null) return;
    for (;;) {
      const end = this.buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = this.buf.subarray(0, end).toString('latin1');
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0);
      if (status >= 100 && status < 200) {
        this.buf = this.buf.subarray(end + 4);
        continue;
      }
      const from = end + 4;
      // The server closes after this answer: the next request goes on a new connection (a
      // request written into a closing socket is the client's loss, not an unanswered one).
      if (/\r\nconnection: *close/i.test(head)) this.closing = true;
      const len = /\r\ncontent-length: *(\d+)/i.exec(head);
      if (p.head || status === 204 || status === 304) return this.done(status, from, from);
      if (len !== null) {
        const to = from + Number(len[1]);
        if (this.buf.length < to) return;
        return this.done(status, from, to);
      }
      if (/\r\ntransfer-encoding: *chunked/i.test(head)) {
        let at = from;
        const chunks: Buffer[] = [];
        for (;;) {
          const nl = this.buf.indexOf('\r\n', at);
          if (nl < 0) return;
          const n = parseInt(this.buf.subarray(at, nl).toString('latin1'), 16);
          if (n === 0) {
            const fin = this.buf.indexOf('\r\n\r\n', nl);
            if (fin < 0) return;
            const body = Buffer.concat(chunks);
            this.buf = this.buf.subarray(fin + 4);
            return this.settle({ status, body });
          }
          if (this.buf.length < nl + 2 + n + 2) return;
          chunks.push(this.buf.subarray(nl + 2, nl + 2 + n));
          at = nl + 2 + n + 2;
        }
      }
      if (closed) return this.done(status, from, this.buf.length); // read to the close
      return;
    }
  }

  private done(status: number, from: number, to: number): void {
    const body = this.buf.subarray(from, to);
    this.buf = this.buf.subarray(to);
    this.settle({ status, body });
  }

  /** Answers read on the current socket, and bytes since the last one. */
  private answeredHere = 0;
  /** Requests sent again on a fresh connection after a kept-alive one closed under them (below). */
  static retries = 0;

  /**
   * A request on a kept-alive connection that the server closes (its idle timeout) as the
   * request goes out is lost to the race every HTTP client meets: such a request, closed with
   * no byte of an answer, is sent once more on a new connection (as browsers and Node's agent
   * do), and only a request no fresh connection answers counts as unanswered.
   */
  async send(r: Req): Promise<Answer | null> {
    const reused = this.sock !== null && !this.sock.destroyed && !this.closing && this.answeredHere > 0;
    const a = await this.sendOnce(r);
    if (a !== null || !reused || this.bytesSinceAnswer > 0) return a;
    Conn.retries++;
    return this.sendOnce(r);
  }

  private bytesSinceAnswer = 0;

  private async sendOnce(r: Req): Promise<Answer | null> {
    this.bytesSinceAnswer = 0;
    if (this.closing) {
      this.closing = false;
      const old = this.sock;
      this.sock = null;
      old?.destroy();
    }
    if (this.sock === null || this.sock.destroyed) {
      this.buf = Buffer.alloc(0);
      const s = await this.open();
      if (s.destroyed) return null;
      this.sock = s;
      this.answeredHere = 0;
    }
    const sock = this.sock;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.settle(null);
        sock.destroy();
      }, ANSWER_MS);
      this.pending = { head: r.method === 'HEAD', resolve, timer };
      sock.write(wire(r));
    });
  }

  close(): void {
    this.sock?.destroy();
  }
}

// ---- the campaign --------------------------------------------------------------------------
interface RouteStats {
  statuses: Record<string, number>;
  ms: number;
}

async function main(): Promise<void> {
  const target = chooseTarget();
  console.log(JSON.stringify({ bench: 'fuzz', target: target.label, seed: SEED, requests: SECONDS > 0 ? null : REQUESTS, seconds: SECONDS || null, connections: CONNECTIONS, threads: THREADS }));
  const s = await startServer(target, THREADS);
  const corpus = new Corpus(s);
  // A genuine session token, so part of the account calls go past authentication.
  try {
    const r = await fetch(`http://127.0.0.1:${s.ports.api}/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `username=${encodeURIComponent(s.creds.username)}&password=${encodeURIComponent(s.creds.password)}` });
    const tok = ((await r.json()) as { access_token?: string }).access_token;
    if (tok) corpus.tokens.push(tok);
  } catch {
    /* none: every account call is then refused at authentication */
  }
  const rss0 = rssMb(s.pid);
  const byRoute = new Map<string, RouteStats>();
  const unanswered = new Map<string, number>();
  let sent = 0;
  let answered = 0;
  let fivexx = 0;
  /** Malformed request lines closed without an answer (not counted as unanswered: they are not HTTP). */
  let dropped = 0;
  const examples5xx: string[] = [];
  const examplesUnanswered: string[] = [];
  const rss: number[] = [];
  const t0 = Date.now();
  const deadline = SECONDS > 0 ? t0 + SECONDS * 1000 : Infinity;
  const third = (k: number) => (SECONDS > 0 ? Date.now() >= t0 + (SECONDS * 1000 * k) / 3 : sent >= (REQUESTS * k) / 3);
  const sampler = setInterval(() => {
    while (rss.length < 3 && third(rss.length + 1)) rss.push(rssMb(s.pid));
  }, 200);
  let exited: string | null = null;
  s.child.once('exit', (code, sig) => (exited = `exit ${code} ${sig ?? ''}`.trim()));

  const worker = async (i: number) => {
    const conns = new Map<number, Conn>();
    while (sent < REQUESTS && Date.now() < deadline && exited === null) {
      const r = corpus.next();
      sent++;
      let c = conns.get(r.port);
      if (c === undefined) conns.set(r.port, (c = new Conn(r.port)));
      const sentAt = performance.now();
      const a = await c.send(r);
      if (a === null && r.route === 'prebid malformed request') {
        dropped++;
        continue;
      }
      if (a === null) {
        unanswered.set(r.route, (unanswered.get(r.route) ?? 0) + 1);
        if (examplesUnanswered.length < 10) examplesUnanswered.push(`${r.route}: ${r.method} ${r.target.slice(0, 200)} ${JSON.stringify(r.headers)}`);
        continue;
      }
      answered++;
      const st = byRoute.get(r.route) ?? { statuses: {}, ms: 0 };
      st.ms += performance.now() - sentAt;
      st.statuses[a.status] = (st.statuses[a.status] ?? 0) + 1;
      byRoute.set(r.route, st);
      if (a.status >= 500 && a.status !== 503) {
        fivexx++;
        if (examples5xx.length < 10) examples5xx.push(`${a.status} ${r.route}: ${r.method} ${r.target.slice(0, 200)} -> ${a.body.toString('utf8').slice(0, 200)}`);
      } else if (a.status === 503) {
        fivexx++;
        if (examples5xx.length < 10) examples5xx.push(`503 ${r.route}: ${r.target.slice(0, 120)} -> ${a.body.toString('utf8').slice(0, 200)}`);
      }
      if (a.status === 200 && r.route === 'prebid GET lookup' && corpus.lids.length < 2000) {
        const m = /"lid":"([A-Za-z0-9_-]+)"/.exec(a.body.toString('latin1'));
        if (m) corpus.lids.push(m[1]!);
      }
      if (a.status === 200 && r.route === 'api POST /login' && corpus.tokens.length < 20) {
        const m = /"access_token":"([^"]+)"/.exec(a.body.toString('utf8'));
        if (m) corpus.tokens.push(m[1]!);
      }
      if (i === 0 && sent % 20000 < 1) process.stderr.write(`  ${sent} sent, ${Math.round((Date.now() - t0) / 1000)} s\n`);
    }
    for (const c of conns.values()) c.close();
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, (_, i) => worker(i)));
  clearInterval(sampler);
  while (rss.length < 3) rss.push(rssMb(s.pid));
  const seconds = (Date.now() - t0) / 1000;
  // Alive: still running, and a health check answered afterwards.
  let health = 0;
  try {
    health = (await fetch(`http://127.0.0.1:${s.ports.prebid}/health-check`)).status;
  } catch {
    health = 0;
  }
  const lived = exited === null && s.child.exitCode === null && health === 200;
  const routes = Object.fromEntries([...byRoute.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, { ...v.statuses, mean_ms: Math.round((v.ms / Object.values(v.statuses).reduce((a, b) => a + b, 0)) * 10) / 10, ...(unanswered.has(k) ? { unanswered: unanswered.get(k) } : {}) }]));
  for (const [k, n] of unanswered) if (!byRoute.has(k)) routes[k] = { mean_ms: NaN, unanswered: n };
  const unansweredTotal = [...unanswered.values()].reduce((a, b) => a + b, 0);
  console.log(JSON.stringify({ routes }, null, 1));
  if (examples5xx.length > 0) console.log(JSON.stringify({ examples5xx }, null, 1));
  if (examplesUnanswered.length > 0) console.log(JSON.stringify({ examplesUnanswered }, null, 1));
  const summary = {
    seed: SEED, sent, answered, seconds: Math.round(seconds), per_second: Math.round(sent / seconds),
    status_5xx: fivexx, unanswered: unansweredTotal, keepalive_close_retries: Conn.retries, malformed_closed_without_answer: dropped, lived, exit: exited, health_after: health,
    rss_mb: { start: rss0, after_first_third: rss[0], after_second_third: rss[1], after_last_third: rss[2] },
    last_third_growth_mb: rss[2]! - rss[1]!, lids_collected: corpus.lids.length,
    repeat: `node --import tsx bench/fuzz.ts ${SECONDS > 0 ? `--seconds ${SECONDS}` : `--requests ${REQUESTS}`} --connections ${CONNECTIONS} --threads ${THREADS} --seed ${SEED}${target.binary ? ` --ivtd ${target.label}` : ''}`,
  };
  console.log(JSON.stringify(summary));
  await stopProcess(s.child);
  rmSync(s.dataDir, { recursive: true, force: true });
  process.exit(fivexx === 0 && unansweredTotal === 0 && lived ? 0 : 1);
}

await main();
