import { createServer, type Server, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { Forward } from "../host.js";

// A local port forward (`ssh -L 127.0.0.1:0:target:port`): each accepted connection becomes one
// direct-tcpip channel (RFC 4254 7.2) to `target:port` as seen from the SSH server.

/** Opens one direct-tcpip channel; `from` is the accepted socket's address (for the server's logs). */
export type OpenTunnel = (from: { address: string; port: number }) => Promise<Duplex>;

export interface LocalForward extends Forward {
  /** Ends the listener and every connection now (the SSH connection is gone). */
  destroy(): void;
}

export async function openLocalForward(
  openTunnel: OpenTunnel,
  onError: (message: string) => void,
): Promise<LocalForward> {
  const sockets = new Set<Socket | Duplex>();
  const track = (s: Socket | Duplex) => {
    sockets.add(s);
    s.once("close", () => sockets.delete(s));
  };
  const server: Server = createServer((socket) => {
    track(socket);
    socket.on("error", () => socket.destroy());
    socket.pause();
    openTunnel({ address: socket.remoteAddress ?? "127.0.0.1", port: socket.remotePort ?? 0 }).then(
      (tunnel) => {
        if (socket.destroyed) {
          tunnel.destroy();
          return;
        }
        track(tunnel);
        tunnel.on("error", () => tunnel.destroy());
        // Either side ending ends the pair: a half-open pair would keep the port busy.
        tunnel.once("close", () => socket.destroy());
        socket.once("close", () => tunnel.destroy());
        socket.pipe(tunnel).pipe(socket);
        socket.resume();
      },
      (e: unknown) => {
        onError(`forwarded connection failed: ${(e as Error).message}`);
        socket.destroy();
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.removeListener("error", reject);
      resolve();
    });
  });
  const port = (server.address() as { port: number }).port;
  let closed: Promise<void> | undefined;
  const dropAll = () => {
    for (const s of sockets) s.destroy();
    sockets.clear();
  };
  const close = () => {
    closed ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
      dropAll();
    });
    return closed;
  };
  return {
    port,
    close,
    destroy: () => void close(),
  };
}
