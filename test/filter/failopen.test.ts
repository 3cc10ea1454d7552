// A filter's port while its thread is replaced (docs/filter.md, "When something fails"): the
// main thread holds it and sends every request on as is. Clients send continuously, a new
// connection each and kept-alive ones, across a thread that fails (an uncaught error) and one
// that ends without a word: no connection is refused but in the hand-overs (about a millisecond
// each: Node 20 cannot share a port), every request is answered exactly once,
// each arrives at the upstream once and byte for byte, those of the gap without a verdict and
// counted as fail-open `not_ready` in /metrics. Then a shutdown while the main thread holds the
// port closes everything; a reload's new upstream reaches the main thread's listener, and a filter
// removed while that listener holds its port lets the port go.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type Socket } from 'node:net';
import { Store } from '../../src/store/db.ts';
import { createCustomer, type CreatedCustomer } from '../../src/store/customers.ts';
import type { FilterSettings } from '../../src/base/filter-settings.ts';
import { LookupServer, type FilterHandover } from '../../src/server/lookup-threads.ts';
import { monotonicMs } from '../../src/prebid/filter/proxy.ts';
import { planMemory } from '../../src/memory/budget.ts';
import { allocateLookupMemory } from '../../src/prebid/lookup-memory.ts';
import { SHAPES } from '../helpers/ortb-shapes.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { until } from '../helpers/until.ts';
import { BID_RESPONSE, startUpstream, type Upstream } from './upstream.ts';

const CLEAN = SHAPES['web banner, site and publisher, schain in source']! as Record<string, unknown>;

/** The part of the test a request was sent in: steady traffic, a thread failing (an uncaught error) and replaced, one ending without a word and replaced. */
type Phase = 'steady' | 'failing' | 'exit';
let phase: Phase = 'steady';

/** What the clients saw. */
interface Tally {
  /** Requests written to a connection. */
  sent: number;
  /** Requests answered once, 200 with the upstream's body. */
  answered: number;
  /** Connection attempts refused (ECONNREFUSED, or reset before a request could be sent: a listener closed with it in its queue), by phase. */
  refused: Record<Phase, number>;
  /** Each refused attempt: its phase, and from just before its connect to its error (monotonic ms): the refusal happened in between. */
  refusedAt: Array<{ phase: Phase; from: number; to: number }>;
  /** Requests written and never answered (the connection reset or closed first), by phase. */
  lost: Record<Phase, string[]>;
  /** Anything else wrong: a second answer, another status, another body, bytes nobody asked for. */
  wrong: string[];
  /** Answers that closed their kept-alive connection (`Connection: close`). */
  closedByServer: number;
}

/** Each request's body (its id the sequence number: unique, to find it at the upstream). */
const sentBodies = new Map<string, Buffer>();

function request(seq: string, close: boolean): Buffer {
  // Indented, so a body re-serialised on the way would differ.
  const body = Buffer.from(JSON.stringify({ ...CLEAN, id: seq, tmax: undefined }, null, 1));
  sentBodies.set(seq, body);
  const head = `POST /openrtb2/auction HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Seq: ${seq}\r\nContent-Length: ${body.byteLength}\r\n${close ? 'Connection: close\r\n' : ''}\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

type Answer = [status: number, head: string, body: string];

/** The answers whole at the start of `buf` (the head lowercased), and the bytes left. */
function answers(buf: Buffer): { got: Answer[]; rest: Buffer } {
  const got: Answer[] = [];
  for (;;) {
    const end = buf.indexOf('\r\n\r\n');
    if (end < 0) break;
    const head = buf.toString('latin1', 0, end);
    const len = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
    if (buf.byteLength < end + 4 + len) break;
    got.push([Number(head.slice(9, 12)), head.toLowerCase(), buf.toString('utf8', end + 4, end + 4 + len)]);
    buf = buf.subarray(end + 4 + len);
  }
  return { got, rest: buf };
}

function check(tally: Tally, seq: string, got: Answer[]): void {
  if (got.length !== 1) tally.wrong.push(`${seq}: ${got.length} answers`);
  const a = got[0]!;
  if (a[0] === 200 && a[2] === BID_RESPONSE) tally.answered++;
  else tally.wrong.push(`${seq}: ${a[0]} ${a[2].slice(0, 60)}`);
}

/** What a connection attempt to `port` meets: 'connected' (then closed), or its error's code. */
function connectOutcome(port: number): Promise<string> {
  return new Promise((resolve) => {
    const c = connect(port, '127.0.0.1');
    c.once('connect', () => {
      c.destroy();
      resolve('connected');
    });
    c.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
  });
}

/** A connection attempt of `phase`, begun at `t0`, refused. */
function refusal(tally: Tally, phase: Phase, t0: number): void {
  tally.refused[phase]++;
  tally.refusedAt.push({ phase, from: t0, to: monotonicMs() });
}

/** One request on a connection of its own (Connection: close). */
function fresh(port: number, seq: string, tally: Tally): Promise<void> {
  return new Promise((resolve) => {
    const t0 = monotonicMs();
    const sock = connect(port, '127.0.0.1');
    const sentIn = phase;
    let connected = false;
    let buf: Buffer = Buffer.alloc(0);
    sock.on('connect', () => {
      connected = true;
      tally.sent++;
      sock.write(request(seq, true));
    });
    sock.on('data', (d: Buffer) => (buf = Buffer.concat([buf, d])));
    sock.on('error', (e: NodeJS.ErrnoException) => {
      if (!connected && (e.code === 'ECONNREFUSED' || e.code === 'ECONNRESET')) refusal(tally, sentIn, t0);
      else if (!connected) tally.wrong.push(`${seq}: connect ${e.code}`);
    });
    sock.on('close', () => {
      if (connected) {
        const { got } = answers(buf);
        if (got.length === 0) tally.lost[phase === 'steady' ? sentIn : phase].push(`${seq} (fresh)`);
        else check(tally, seq, got);
      }
      resolve();
    });
  });
}

interface Conn {
  /** The answers to `bytes` (null: the connection closed first). */
  ask(bytes: Buffer): Promise<Answer[] | null>;
  destroy(): void;
}

/** A kept-alive connection (null: refused). */
function open(port: number, tally: Tally): Promise<Conn | null> {
  return new Promise((resolve) => {
    const t0 = monotonicMs();
    const s = connect(port, '127.0.0.1');
    s.setNoDelay(true);
    const sentIn = phase;
    let connected = false;
    let closed = false;
    let buf: Buffer = Buffer.alloc(0);
    let waiting: ((a: Answer[] | null) => void) | null = null;
    s.on('error', (e: NodeJS.ErrnoException) => {
      if (connected) return; // 'close' follows
      if (e.code === 'ECONNREFUSED' || e.code === 'ECONNRESET') refusal(tally, sentIn, t0);
      else tally.wrong.push(`connect ${e.code}`);
      resolve(null);
    });
    s.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      const { got, rest } = answers(buf);
      if (got.length === 0) return;
      buf = rest;
      const w = waiting;
      waiting = null;
      if (w === null) tally.wrong.push('an answer nobody asked for');
      else w(got);
    });
    s.on('close', () => {
      closed = true;
      const w = waiting;
      waiting = null;
      w?.(null);
    });
    s.once('connect', () => {
      connected = true;
      resolve({
        ask: (bytes) => {
          if (closed) return Promise.resolve(null);
          const p = new Promise<Answer[] | null>((r) => (waiting = r));
          s.write(bytes);
          return p;
        },
        destroy: () => s.destroy(),
      });
    });
  });
}

/** A kept-alive client: one request at a time, a new connection when the server closed its last. */
async function keptAlive(port: number, name: string, tally: Tally, running: () => boolean): Promise<void> {
  let n = 0;
  while (running()) {
    const conn = await open(port, tally);
    if (conn === null) {
      await new Promise((r) => setTimeout(r, 1));
      continue;
    }
    while (running()) {
      const seq = `${name}-${n++}`;
      const sentIn = phase;
      tally.sent++;
      const got = await conn.ask(request(seq, false));
      if (got === null) {
        tally.lost[phase === 'steady' ? sentIn : phase].push(`${seq} (kept alive)`);
        break;
      }
      check(tally, seq, got);
      if (/\r\nconnection: *close/.test(got[0]![1])) {
        tally.closedByServer++;
        break;
      }
    }
    conn.destroy();
  }
}

async function metricValue(s: TestServer, name: string, labels: Record<string, string>): Promise<number> {
  const text = await (await fetch(`${s.metrics}/metrics`)).text();
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (line.startsWith(name + '{') && want.every((w) => line.includes(w))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return 0;
}

let up: Upstream;
let customer: CreatedCustomer;
let dir: string;
t.before(async () => {
  up = await startUpstream();
  dir = mkdtempSync(join(tmpdir(), 'ivtd-failopen-'));
  const store = await Store.open(dir);
  customer = await createCustomer(store, { name: 'Failing Co', username: 'failing', password: 'correct horse battery' });
  await store.close();
});
t.teardown(async () => {
  await up?.close();
  rmSync(dir, { recursive: true, force: true });
});

t.test("a filter's thread fails, then ends without a word, under traffic: the main thread holds its port meanwhile", async (t) => {
  const f: FilterSettings = { name: 'pbs', port: 0, upstream: up.url, partner: customer.partner_id, mode: 'monitor', nobid: 'nbr', timeoutMs: 2000, maxSockets: 16 };
  const s = await startTestServer({ threads: 1, filters: [f] }, dir);
  t.teardown(() => s.stop());
  const lookups = s.server.lookups;
  const port = lookups.filterPorts.pbs!;
  const index = 1; // after the one lookup thread
  // What the main thread's fail-open listener reported (it has no heap of its own to report).
  let mainForwarded = 0;
  s.server.countSinks.push((_rows, stats) => {
    if (stats.filter && stats.heapTotal === 0) mainForwarded += stats.filter.forwarded;
  });
  const tally: Tally = { sent: 0, answered: 0, refused: { steady: 0, failing: 0, exit: 0 }, refusedAt: [], lost: { steady: [], failing: [], exit: [] }, wrong: [], closedByServer: 0 };
  const handovers = () => (lookups as { filterHandovers?: FilterHandover[] }).filterHandovers;

  const verdict = (i: number) => up.header(up.received[i]!, 'x-ivtd-verdict') !== undefined;
  /** Waits until requests went on unjudged after `from`, then judged again, and the replacement has its port. */
  const replaced = async (from: number, gives: number) => {
    await until('requests sent on unjudged', async () => up.received.slice(from).some((_, i) => !verdict(from + i)), 10_000);
    const first = up.received.findIndex((_, i) => i >= from && !verdict(i));
    await until('judged again by the replacement', async () => up.received.slice(first).some((_, i) => verdict(first + i)) && (handovers() === undefined || handovers()!.filter((h) => h.phase === 'give').length >= gives), 30_000);
    await new Promise((r) => setTimeout(r, 300));
  };
  /** Clients send until the thread, failed by `fail`, is replaced: two a connection each, two kept alive. */
  const traffic = async (what: Phase, fail: () => void, gives: number) => {
    let running = true;
    let n = 0;
    const freshLoop = async (name: string) => {
      while (running) await fresh(port, `${what}-${name}-${n++}`, tally);
    };
    const clients = [freshLoop('fresh-a'), freshLoop('fresh-b'), keptAlive(port, `${what}-kept-a`, tally, () => running), keptAlive(port, `${what}-kept-b`, tally, () => running)];
    phase = 'steady';
    await until('traffic judged', async () => up.received.length > 50 && verdict(up.received.length - 1), 10_000);
    phase = what;
    fail();
    await replaced(up.received.length, gives);
    phase = 'steady';
    running = false;
    await Promise.all(clients);
  };
  const forwarded = () => metricValue(s, 'ivtd_filter_requests_total', { filter: 'pbs', outcome: 'forwarded' });
  const notReady = () => metricValue(s, 'ivtd_filter_fail_open_total', { filter: 'pbs', reason: 'not_ready' });

  // An uncaught error: the thread says so, the main thread makes ready, the thread lets go.
  await traffic('failing', () => lookups.crashThread(index), 1);
  let noVerdict = up.received.filter((_, i) => !verdict(i)).length;
  t.comment(`a failing thread: requests ${tally.sent}; answered ${tally.answered}; refused connections ${tally.refused.failing}; lost ${tally.lost.failing.length}; kept-alive connections closed by the server ${tally.closedByServer}; sent on unjudged ${noVerdict}, by the main thread ${mainForwarded}`);
  // Node 20's net cannot share a port (no SO_REUSEPORT): each of the two hand-overs leaves the
  // port closed for a moment (about a millisecond on a quiet host; tens when the woken thread
  // waits for a core), which a connection made then meets (0 in most runs; before this work,
  // thousands: the port was closed from the failure until the replacement listened). Each
  // refusal is placed in time: between its connect and its error, it met a measured hand-over.
  const gaps = (handovers() ?? []).filter((h) => h.phase !== 'exit');
  const outside = tally.refusedAt.filter((r) => r.phase === 'failing' && !gaps.some((g) => r.from <= g.to + 1 && r.to >= g.from - 1));
  t.same(outside, [], `no connection refused across the failing thread and its replacement but in the two hand-overs (${tally.refused.failing} refused, in gaps of ${gaps.map((g) => g.ms.toFixed(2)).join(' and ')} ms)`);
  t.equal(gaps.length, 2, 'the two hand-overs measured');
  t.same([tally.lost.steady, tally.lost.failing], [[], []], 'no request lost');
  t.same(tally.wrong, [], 'no second answer, no other answer');
  t.equal(tally.answered, tally.sent, "every request answered once, with the upstream's answer");
  t.ok(noVerdict > 0, `requests of the gap went on without a verdict (${noVerdict})`);
  // The same /metrics series: what the threads and the main thread counted, all of it.
  await until('every forward counted', async () => (await forwarded()) === up.received.length && (await notReady()) === noVerdict, 8000).catch(() => undefined);
  t.ok(mainForwarded > 0, `the main thread sent some on itself (${mainForwarded})`);
  t.equal(await forwarded(), up.received.length, 'outcome="forwarded" counts every request, the main thread\'s too');
  t.equal(await notReady(), noVerdict, 'reason="not_ready" counts those sent on without a verdict');
  t.equal(await metricValue(s, 'ivtd_filter_upstream_duration_seconds_count', { filter: 'pbs' }), up.received.length, 'the upstream latency of each');

  // Ends at once, without a word (before this work, an uncaught error again): its port is free
  // before the main thread hears of it, and the requests it was answering are lost with it (at
  // most one a connection: four clients), its last second's figures too.
  const sentBefore = tally.sent;
  await traffic('exit', () => lookups.crashThread(index, true), 2);
  noVerdict = up.received.filter((_, i) => !verdict(i)).length;
  t.comment(`a thread ending without a word: requests ${tally.sent - sentBefore}; refused connections ${tally.refused.exit}; lost ${tally.lost.exit.length}; sent on unjudged ${noVerdict} in all`);
  t.ok(tally.lost.exit.length <= 4, `only its requests under way lost (${tally.lost.exit.length})`);
  t.same(tally.wrong, [], 'no second answer, no other answer');
  t.equal(tally.answered, tally.sent - tally.lost.exit.length, 'every other request answered once');
  await until('the fail-opens counted', async () => (await notReady()) === noVerdict, 8000).catch(() => undefined);
  t.equal(await notReady(), noVerdict, 'reason="not_ready" counts those sent on without a verdict');

  // At the upstream: each request once, its body byte for byte.
  const seen = new Map<string, number>();
  for (const r of up.received) {
    const seq = up.header(r, 'x-seq') ?? '';
    seen.set(seq, (seen.get(seq) ?? 0) + 1);
    if (!r.body.equals(sentBodies.get(seq) ?? Buffer.alloc(0))) t.fail(`${seq}: its body changed on the way`);
  }
  t.ok(seen.size >= tally.answered && seen.size <= tally.sent, `every answered request reached the upstream (${seen.size} of ${tally.sent})`);
  t.ok([...seen.values()].every((c) => c === 1), 'and once');

  const h = handovers();
  t.comment(`hand-overs (ms): ${JSON.stringify(h?.map((x) => [x.phase, Math.round(x.ms * 1000) / 1000]) ?? 'not measured')}`);
  t.same(h?.map((x) => x.phase), ['take', 'give', 'exit', 'give'], 'taken at the let-go, given back, taken after the exit, given back');
  t.ok(h?.every((x) => x.ms >= 0 && x.ms < 250), 'each gap short');
});

t.test('a shutdown while the main thread holds a filter\'s port closes everything', async (t) => {
  const memory = allocateLookupMemory(planMemory(32, 1));
  const lookups = new LookupServer({
    host: '127.0.0.1', port: 0, threads: 1, memory, onCounts: () => undefined,
    onWorkerError: (i, e) => t.comment(`thread ${i}: ${e.message}`),
    filters: [{ name: 'held', port: 0, upstream: up.url, partner: customer.partner_id, mode: 'block', nobid: '204', timeoutMs: 300, maxSockets: 4 }],
    // The replacement waits long: the main thread holds the port meanwhile.
    restartDelayMs: { min: 60_000, max: 60_000 },
  });
  await lookups.start([]);
  const port = lookups.filterPorts.held!;
  lookups.crashThread(1);
  await until('the main thread holds the port', async () => lookups.filterHandovers.some((h) => h.phase === 'take'));
  // A kept-alive connection to the main thread's listener, answered.
  const sock = connect(port, '127.0.0.1');
  await new Promise<void>((r) => sock.once('connect', () => r()));
  let text = '';
  sock.setEncoding('latin1');
  sock.on('data', (d: string) => (text += d));
  const closed = new Promise<void>((r) => sock.once('close', () => r()));
  sock.write(request('held-1', false));
  await until('answered', async () => text.includes(BID_RESPONSE));
  t.match(text, /^HTTP\/1\.1 200 /, 'sent on and answered');
  t.notMatch(text, /connection: close/i, 'kept alive');
  const t0 = Date.now();
  await lookups.stop();
  t.ok(Date.now() - t0 < 5000, `stopped (${Date.now() - t0} ms)`);
  await closed;
  t.pass('its connection closed');
  t.equal(await connectOutcome(port), 'ECONNREFUSED', 'the port is let go');
});

t.test("a reload's settings reach the main thread's listener; a filter removed while it holds the port lets the port go", async (t) => {
  const up2 = await startUpstream();
  t.teardown(() => up2.close());
  const memory = allocateLookupMemory(planMemory(32, 1));
  const settings: FilterSettings = { name: 'moved', port: 0, upstream: up.url, partner: customer.partner_id, mode: 'block', nobid: '204', timeoutMs: 300, maxSockets: 4 };
  const lookups = new LookupServer({
    host: '127.0.0.1', port: 0, threads: 1, memory, onCounts: () => undefined,
    onWorkerError: (i, e) => t.comment(`thread ${i}: ${e.message}`),
    filters: [settings],
    restartDelayMs: { min: 60_000, max: 60_000 },
  });
  t.teardown(() => lookups.stop());
  await lookups.start([]);
  const port = lookups.filterPorts.moved!;
  const index = lookups.filterIndex('moved')!;
  t.ok(await lookups.updateFilter(index, { ...settings, upstream: up2.url }), 'the thread took the new upstream');
  lookups.crashThread(index);
  await until('the main thread holds the port', async () => lookups.filterHandovers.some((h) => h.phase === 'take'));
  const before = up.received.length;
  const r = await fetch(`http://127.0.0.1:${port}/openrtb2/auction`, { method: 'POST', body: JSON.stringify({ ...CLEAN, id: 'after-reload' }), headers: { 'content-type': 'application/json' } });
  t.equal(await r.text(), BID_RESPONSE, 'answered by the main thread');
  t.ok(up2.received.some((q) => q.body.toString().includes('"after-reload"')), "sent to the reload's upstream");
  t.equal(up.received.length, before, 'not to the old one');
  await lookups.retireFilter(index, 300);
  t.equal(await connectOutcome(port), 'ECONNREFUSED', 'removed: its port is let go, though its thread was being replaced');
});
