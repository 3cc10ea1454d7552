// A TCP proxy in front of a server, to make the failures a network makes on purpose: in
// `drop-responses` mode every request reaches the server, but the connection is cut as
// soon as the answer starts, so the client never learns that the request succeeded.
import { once } from 'node:events';
import net from 'node:net';

export type ProxyMode = 'pass' | 'drop-responses';

export interface TcpProxy {
  readonly port: number;
  mode: ProxyMode;
  /** Answers cut in drop-responses mode. */
  readonly dropped: number;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number, host = '127.0.0.1'): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let dropped = 0;
  const proxy = {
    mode: 'pass' as ProxyMode,
  };
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, host);
    sockets.add(client);
    sockets.add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', end);
    upstream.on('error', end);
    client.on('close', end);
    upstream.on('close', end);
    client.on('data', (d) => upstream.write(d));
    upstream.on('data', (d) => {
      if (proxy.mode === 'drop-responses') {
        dropped++;
        end();
        return;
      }
      client.write(d);
    });
  });
  server.listen(0, host);
  await once(server, 'listening');
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    get mode() {
      return proxy.mode;
    },
    set mode(m: ProxyMode) {
      proxy.mode = m;
    },
    get dropped() {
      return dropped;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
