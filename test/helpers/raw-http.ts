// Raw HTTP over a socket, for what fetch() would hide or add: exact bytes on the wire, a HEAD
// answer's missing body, two answers on one connection, a request no server answers.
import { connect } from 'node:net';

export interface RawExchange {
  /** Everything the server sent (latin1). */
  text: string;
  /** Whether the server had closed the connection by then. */
  closed: boolean;
}

/**
 * Writes `request` to 127.0.0.1:`port` and collects what comes back until the server closes,
 * `until` matches the text so far, or `waitMs` pass (then the socket is dropped).
 */
export function rawExchange(port: number, request: string, opts: { waitMs?: number; until?: RegExp } = {}): Promise<RawExchange> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1', () => sock.write(request));
    let text = '';
    const done = (closed: boolean) => {
      clearTimeout(timer);
      sock.destroy();
      resolve({ text, closed });
    };
    const timer = setTimeout(() => done(false), opts.waitMs ?? 3000);
    sock.setEncoding('latin1');
    sock.on('data', (d: string) => {
      text += d;
      if (opts.until?.test(text)) done(false);
    });
    sock.on('close', () => done(true));
    sock.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}
