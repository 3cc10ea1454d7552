// A tiny authoritative DNS server over UDP on loopback, for tests of the crawler reverse-DNS
// check: it answers PTR, A and AAAA questions from a table (RFC 1035 wire format), NXDOMAIN
// for a name it does not know, and can be told to stay silent (a timeout) or to answer
// SERVFAIL. Every question it receives is recorded.
import { createSocket, type Socket } from 'node:dgram';

export interface DnsRecords {
  /** `1.2.3.4.in-addr.arpa` / nibble form → host names. */
  ptr?: Record<string, string[]>;
  a?: Record<string, string[]>;
  aaaa?: Record<string, string[]>;
}

export interface TestDnsServer {
  port: number;
  /** `127.0.0.1:<port>`, as --crawler-dns takes it. */
  address: string;
  records: DnsRecords;
  questions: Array<{ name: string; type: number }>;
  mode: 'answer' | 'silent' | 'servfail';
  close(): Promise<void>;
}

const TYPE = { A: 1, PTR: 12, AAAA: 28 } as const;

/** The reverse name of an IPv4 address or a fully written IPv6 one. */
export function reverseName(ip: string): string {
  if (ip.includes('.')) return `${ip.split('.').reverse().join('.')}.in-addr.arpa`;
  const groups = expand6(ip);
  return `${groups.join('').split('').reverse().join('.')}.ip6.arpa`;
}

function expand6(ip: string): string[] {
  const [head, tail] = ip.split('::');
  const h = head ? head.split(':') : [];
  const t = tail !== undefined && tail !== '' ? tail.split(':') : [];
  const fill = ip.includes('::') ? 8 - h.length - t.length : 0;
  return [...h, ...Array<string>(fill).fill('0'), ...t].map((g) => g.padStart(4, '0'));
}

function encodeName(name: string): Buffer {
  const parts = name.replace(/\.$/, '').split('.').filter(Boolean);
  return Buffer.concat([...parts.map((p) => Buffer.concat([Buffer.from([p.length]), Buffer.from(p, 'ascii')])), Buffer.from([0])]);
}

function readQuestion(msg: Buffer): { name: string; type: number; end: number } | null {
  let at = 12;
  const labels: string[] = [];
  while (at < msg.length) {
    const len = msg[at]!;
    if (len === 0) {
      at++;
      break;
    }
    labels.push(msg.subarray(at + 1, at + 1 + len).toString('ascii'));
    at += 1 + len;
  }
  if (at + 4 > msg.length) return null;
  return { name: labels.join('.').toLowerCase(), type: msg.readUInt16BE(at), end: at + 4 };
}

function answer(msg: Buffer, records: DnsRecords, rcodeOverride: number | null): Buffer {
  const q = readQuestion(msg)!;
  const rdatas: Buffer[] = [];
  let known = false;
  if (q.type === TYPE.PTR && records.ptr?.[q.name]) {
    known = true;
    for (const h of records.ptr[q.name]!) rdatas.push(encodeName(h));
  } else if (q.type === TYPE.A || q.type === TYPE.AAAA) {
    const a = records.a?.[q.name];
    const aaaa = records.aaaa?.[q.name];
    known = a !== undefined || aaaa !== undefined;
    if (q.type === TYPE.A) for (const ip of a ?? []) rdatas.push(Buffer.from(ip.split('.').map(Number)));
    else for (const ip of aaaa ?? []) rdatas.push(Buffer.from(expand6(ip).flatMap((g) => [parseInt(g.slice(0, 2), 16), parseInt(g.slice(2), 16)])));
  } else if (records.ptr?.[q.name]) known = true;
  const rcode = rcodeOverride ?? (known ? 0 : 3);
  const header = Buffer.alloc(12);
  msg.copy(header, 0, 0, 2);
  header.writeUInt16BE(0x8400 | 0x0100 | 0x0080 | rcode, 2); // QR, AA, RD, RA
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(rcode === 0 ? rdatas.length : 0, 6);
  const question = msg.subarray(12, q.end);
  const answers = rcode === 0
    ? rdatas.map((rd) => {
        const rr = Buffer.alloc(12);
        rr.writeUInt16BE(0xc00c, 0);
        rr.writeUInt16BE(q.type, 2);
        rr.writeUInt16BE(1, 4);
        rr.writeUInt32BE(60, 6);
        rr.writeUInt16BE(rd.length, 10);
        return Buffer.concat([rr, rd]);
      })
    : [];
  return Buffer.concat([header, question, ...answers]);
}

export async function startDnsServer(records: DnsRecords = {}): Promise<TestDnsServer> {
  const socket: Socket = createSocket('udp4');
  const server: TestDnsServer = {
    port: 0,
    address: '',
    records,
    questions: [],
    mode: 'answer',
    close: () => new Promise((resolve) => socket.close(() => resolve())),
  };
  socket.on('message', (msg, rinfo) => {
    const q = readQuestion(msg);
    if (q === null) return;
    server.questions.push({ name: q.name, type: q.type });
    if (server.mode === 'silent') return;
    socket.send(answer(msg, server.records, server.mode === 'servfail' ? 2 : null), rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  server.port = socket.address().port;
  server.address = `127.0.0.1:${server.port}`;
  return server;
}
