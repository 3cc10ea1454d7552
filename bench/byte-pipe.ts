// bench:filter's floor of one extra hop in Node: a byte pipe between each client connection
// and a connection of its own to the upstream (node:net streams, Nagle off), no HTTP parsing,
// no verdict: what any Node process between the client and the upstream costs on this host
// before it does anything. argv[2]: the upstream's port. Prints {"port":N}; exits on SIGTERM.
import { connect, createServer, type Socket } from 'node:net';

const upPort = Number(process.argv[2]);
const srv = createServer({ noDelay: true }, (client: Socket) => {
  const up = connect({ host: '127.0.0.1', port: upPort, noDelay: true });
  client.on('data', (d) => up.write(d));
  up.on('data', (d) => client.write(d));
  client.on('close', () => up.destroy());
  up.on('close', () => client.destroy());
  client.on('error', () => undefined);
  up.on('error', () => undefined);
});
srv.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: (srv.address() as { port: number }).port }) + '\n'));
process.on('SIGTERM', () => process.exit(0));
