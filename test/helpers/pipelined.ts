// Many GET requests at a low cost to the test itself: raw keep-alive connections, each
// carrying a batch of requests at a time (HTTP/1.1 pipelining; the server answers them in
// order). fetch() costs the test process ~0.5 ms of CPU a request (undici, web streams,
// and tap's async hooks on every promise), which made the tests that send thousands of
// lookups spend their time in the client rather than in the server under test. Every
// request still reaches the server as its own request, on one of several connections.
import { connect, type Socket } from 'node:net';

export interface PipelinedAnswer {
  status: number;
  body: string;
}

/** One connection; `batch` writes the requests at once and resolves with their answers in order. */
class Connection {
  private buf: Buffer = Buffer.alloc(0);
  private pending: Array<(a: PipelinedAnswer) => void> = [];
  private failed: Error | null = null;
  private onFail: ((e: Error) => void) | null = null;

  private constructor(private readonly sock: Socket) {
    sock.on('data', (d: Buffer) => {
      this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
      this.parse();
    });
    const fail = (e: Error) => {
      this.failed ??= e;
      this.onFail?.(this.failed);
    };
    sock.on('error', fail);
    sock.on('close', () => {
      if (this.pending.length) fail(new Error(`connection closed with ${this.pending.length} requests unanswered`));
    });
  }

  static open(port: number): Promise<Connection> {
    return new Promise((resolve, reject) => {
      const sock = connect(port, '127.0.0.1', () => {
        sock.off('error', reject);
        resolve(new Connection(sock));
      });
      sock.once('error', reject);
      sock.setNoDelay(true);
    });
  }

  private parse(): void {
    while (this.pending.length) {
      const head = this.buf.indexOf('\r\n\r\n');
      if (head < 0) return;
      const header = this.buf.subarray(0, head).toString('latin1');
      if (/\r\ntransfer-encoding:/i.test(header)) {
        this.sock.destroy(new Error(`chunked answer: not supported here (${header.split('\r\n')[0]})`));
        return;
      }
      const len = Number(/\r\ncontent-length: *(\d+)/i.exec(header)?.[1] ?? 0);
      if (this.buf.length < head + 4 + len) return;
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(header)?.[1] ?? 0);
      const body = this.buf.subarray(head + 4, head + 4 + len).toString('utf8');
      this.buf = this.buf.subarray(head + 4 + len);
      this.pending.shift()!({ status, body });
    }
  }

  batch(paths: string[], connection: 'keep-alive' | 'close' = 'keep-alive'): Promise<PipelinedAnswer[]> {
    if (this.failed) return Promise.reject(this.failed);
    return new Promise((resolve, reject) => {
      const answers: PipelinedAnswer[] = [];
      this.onFail = reject;
      for (let i = 0; i < paths.length; i++) {
        this.pending.push((a) => {
          answers.push(a);
          if (answers.length === paths.length) {
            this.onFail = null;
            resolve(answers);
          }
        });
      }
      const last = connection === 'close' ? 'Connection: close\r\n' : '';
      this.sock.write(paths.map((p, i) => `GET ${p} HTTP/1.1\r\nHost: 127.0.0.1\r\n${i === paths.length - 1 ? last : ''}\r\n`).join(''), 'latin1');
    });
  }

  close(): void {
    this.sock.destroy();
  }
}

/**
 * GETs every path from 127.0.0.1:`port` over `connections` connections, each with up to
 * `depth` requests in flight at a time (every connection takes the next `depth` paths when
 * its previous batch is answered). Resolves with the answers in the order of `paths`;
 * rejects when a connection fails or closes with requests unanswered.
 */
export async function getPipelined(port: number, paths: string[], opts: { connections?: number; depth?: number } = {}): Promise<PipelinedAnswer[]> {
  const connections = Math.max(1, Math.min(opts.connections ?? 16, paths.length));
  const depth = Math.max(1, opts.depth ?? 16);
  const answers = new Array<PipelinedAnswer>(paths.length);
  const conns = await Promise.all(Array.from({ length: connections }, () => Connection.open(port)));
  let next = 0;
  try {
    await Promise.all(
      conns.map(async (c) => {
        while (next < paths.length) {
          const from = next;
          next = Math.min(paths.length, next + depth);
          const got = await c.batch(paths.slice(from, next));
          for (let i = 0; i < got.length; i++) answers[from + i] = got[i]!;
        }
      }),
    );
  } finally {
    for (const c of conns) c.close();
  }
  return answers;
}

/** One GET on a connection of its own (`Connection: close`), as a new client makes it. */
export async function getFresh(port: number, path: string): Promise<PipelinedAnswer> {
  const c = await Connection.open(port);
  try {
    return (await c.batch([path], 'close'))[0]!;
  } finally {
    c.close();
  }
}

/**
 * Keeps the server busy until stop(): `connections` connections, each sending `depth`
 * pipelined GETs of `path()` at a time, again and again; every answer must be a 200.
 * stop() resolves once every connection's last batch is answered (with the count sent),
 * or rejects with the first failure.
 */
export function keepBusy(port: number, path: () => string, opts: { connections?: number; depth?: number } = {}): { stop(): Promise<number> } {
  const depth = Math.max(1, opts.depth ?? 8);
  let running = true;
  let sent = 0;
  const loops = Array.from({ length: Math.max(1, opts.connections ?? 6) }, async () => {
    const c = await Connection.open(port);
    try {
      while (running) {
        const paths = Array.from({ length: depth }, path);
        sent += paths.length;
        const refused = (await c.batch(paths)).find((a) => a.status !== 200);
        if (refused) throw new Error(`busy load: ${refused.status} ${refused.body}`);
      }
    } finally {
      c.close();
    }
  });
  const all = Promise.all(loops);
  all.catch(() => {}); // reported by stop()
  return {
    async stop() {
      running = false;
      await all;
      return sent;
    },
  };
}
