// A TCP listener that accepts connections and never answers: what a hung database, a collector
// behind a half-open route or a stalled peer looks like to a client. Closing resets what it holds.
import net from 'node:net';

export interface SilentServer {
  port: number;
  close(): Promise<void>;
}

export async function silentServer(): Promise<SilentServer> {
  const held = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    held.add(socket);
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () => {
      for (const socket of held) socket.resetAndDestroy();
      held.clear();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
