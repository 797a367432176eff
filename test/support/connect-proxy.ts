import { createServer, type IncomingMessage, type Server } from "node:http";
import { connect, type Socket } from "node:net";

// An HTTP proxy as corporate networks and self-hosted runners have them: it answers CONNECT
// (RFC 9110 §9.3.6) by opening a TCP connection to the requested host and port and relaying bytes
// both ways, which is how clients reach HTTPS (and, with @actions/http-client's tunnel agent,
// plain HTTP) servers through a proxy. It asks for Basic credentials (407 without them, RFC 9110
// §11.7.1 Proxy-Authorization) and records every CONNECT target. `hosts` resolves names that only
// the proxy knows: a download of such a name that succeeds went through the proxy.

export interface ConnectProxy {
  /** http://user:password@127.0.0.1:<port> */
  url: string;
  /** The `host:port` of every CONNECT it accepted, in order. */
  connects: string[];
  close(): Promise<void>;
}

export interface ConnectProxyOptions {
  /** Name → address the proxy connects to for it. */
  hosts?: Record<string, string>;
  user?: string;
  password?: string;
}

export async function startConnectProxy(o: ConnectProxyOptions = {}): Promise<ConnectProxy> {
  const user = o.user ?? "kubeforge";
  const password = o.password ?? "proxy-secret";
  const expected = `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
  const connects: string[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((_req, res) => {
    res.writeHead(405, { "content-type": "text/plain" }).end("this proxy only tunnels (CONNECT)\n");
  });
  server.on("connect", (req: IncomingMessage, client: Socket) => {
    sockets.add(client);
    client.on("close", () => sockets.delete(client));
    client.on("error", () => client.destroy());
    if (req.headers["proxy-authorization"] !== expected) {
      client.end("HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\n\r\n");
      return;
    }
    const target = req.url ?? "";
    const colon = target.lastIndexOf(":");
    const host = target.slice(0, colon);
    const port = Number(target.slice(colon + 1));
    const upstream = connect(port, o.hosts?.[host] ?? host);
    sockets.add(upstream);
    upstream.on("close", () => sockets.delete(upstream));
    upstream.once("connect", () => {
      connects.push(target);
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on("error", () => {
      if (!client.destroyed) client.end("HTTP/1.1 502 Bad Gateway\r\n\r\n");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://${user}:${password}@127.0.0.1:${port}`,
    connects,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
