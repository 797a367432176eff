import { connect, type Socket } from "node:net";

/**
 * A TCP connection from this machine to host:port, given up after `timeoutMs` with the error
 * `timedOut` makes (the socket destroyed); a socket error rejects as it is.
 */
export function connectWithin(
  host: string,
  port: number,
  timeoutMs: number,
  timedOut: () => Error,
): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(timedOut());
    }, timeoutMs);
    socket.once("connect", () => {
      clearTimeout(timer);
      resolve(socket);
    });
    socket.once("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}
