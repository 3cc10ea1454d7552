// A bidder for the filter's tests: a node:http server that records every request it gets
// (method, URL, raw headers, body bytes) and answers a fixed bid response, or, by the
// query's `behave`, slowly (400 ms, or `waitN`: N ms), never, chunked, or by dropping the
// connection.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  method: string;
  url: string;
  rawHeaders: string[];
  body: Buffer;
}

export const BID_RESPONSE = '{"id":"resp-1","seatbid":[{"bid":[{"id":"b1","impid":"1","price":1.25}]}],"cur":"USD"}';

export interface Upstream {
  url: string;
  port: number;
  received: Received[];
  /** The header named `name` (case-insensitive) of a received request, joined when repeated. */
  header(r: Received, name: string): string | undefined;
  /** Connections open to it now (kept-alive ones included). */
  connections(): Promise<number>;
  close(): Promise<void>;
}

export async function startUpstream(): Promise<Upstream> {
  const received: Received[] = [];
  const hanging = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ method: req.method ?? '', url: req.url ?? '', rawHeaders: req.rawHeaders.slice(), body: Buffer.concat(chunks) });
      const behave = new URL(req.url ?? '/', 'http://x').searchParams.get('behave');
      const answer = () => {
        res.writeHead(200, { 'Content-Type': 'application/json', 'X-Bidder': 'test-upstream', 'Content-Length': Buffer.byteLength(BID_RESPONSE) });
        res.end(BID_RESPONSE);
      };
      if (behave === 'slow') setTimeout(answer, 400);
      else if (behave !== null && /^wait\d+$/.test(behave)) setTimeout(answer, Number(behave.slice(4)));
      else if (behave === 'hang') hanging.add(res);
      else if (behave === 'drop') req.socket.destroy();
      else if (behave === 'chunked') {
        res.writeHead(201, { 'Content-Type': 'application/json', 'X-Bidder': 'test-upstream' });
        res.write(BID_RESPONSE.slice(0, 10));
        setTimeout(() => res.end(BID_RESPONSE.slice(10)), 5);
      } else if (behave === 'nobid') {
        res.writeHead(204);
        res.end();
      } else answer();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/openrtb2/auction`,
    port,
    received,
    header(r, name) {
      const values: string[] = [];
      for (let i = 0; i < r.rawHeaders.length; i += 2) if (r.rawHeaders[i]!.toLowerCase() === name.toLowerCase()) values.push(r.rawHeaders[i + 1]!);
      return values.length === 0 ? undefined : values.join(', ');
    },
    connections() {
      return new Promise((resolve, reject) => server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
