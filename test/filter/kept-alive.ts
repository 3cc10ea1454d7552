// One kept-alive client connection for the filter's tests: one request at a time (answers with
// a Content-Length), and whether the server closed it.
import { connect } from 'node:net';

export interface KeptAlive {
  /** Writes `req`; resolves with the whole answer (head and body, latin1). */
  ask(req: string): Promise<string>;
  /** The server (or the network) closed it. */
  readonly closed: boolean;
  close(): void;
}

export async function keptAlive(port: number): Promise<KeptAlive> {
  const sock = connect(port, '127.0.0.1');
  sock.setNoDelay(true);
  await new Promise<void>((r, j) => sock.once('connect', r).once('error', j));
  let buf = '';
  let closed = false;
  let waiting: { resolve: (a: string) => void; reject: (e: Error) => void } | null = null;
  sock.setEncoding('latin1');
  sock.on('error', () => undefined); // 'close' follows
  sock.on('close', () => {
    closed = true;
    waiting?.reject(new Error(`the connection closed before an answer (had: ${JSON.stringify(buf.slice(0, 80))})`));
    waiting = null;
  });
  sock.on('data', (d: string) => {
    buf += d;
    const head = buf.indexOf('\r\n\r\n');
    if (head < 0 || waiting === null) return;
    const len = Number(/content-length: *(\d+)/i.exec(buf.slice(0, head))?.[1] ?? 0);
    if (buf.length < head + 4 + len) return;
    const a = buf.slice(0, head + 4 + len);
    buf = buf.slice(head + 4 + len);
    const w = waiting;
    waiting = null;
    w.resolve(a);
  });
  return {
    ask: (req) =>
      new Promise((resolve, reject) => {
        if (closed) return reject(new Error('the connection is closed'));
        waiting = { resolve, reject };
        sock.write(req, 'latin1');
      }),
    get closed() {
      return closed;
    },
    close: () => sock.destroy(),
  };
}

/** A POST of `body` (JSON) to `path`, as raw HTTP/1.1 on a kept-alive connection. */
export function postRequest(path: string, body: string): string {
  return `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}
