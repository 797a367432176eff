import { connect, createServer, type Server } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import {
  directTarget,
  startTunnelProxy,
  type TunnelProxy,
} from "../../../src/remote/tunnel/proxy.js";

// The runner-side tunnel's TCP proxy: each connection goes to a target that answers, the last
// good one first, the next one when it cannot connect.

const servers: Server[] = [];
let proxy: TunnelProxy | undefined;

afterEach(async () => {
  await proxy?.close();
  proxy = undefined;
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/** A server answering every connection with its name. */
async function namedServer(name: string, port = 0): Promise<{ server: Server; port: number }> {
  const server = createServer((socket) => socket.end(name));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return { server, port: (server.address() as { port: number }).port };
}

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const { server, port } = await namedServer("gone");
  await new Promise((r) => server.close(r));
  servers.splice(servers.indexOf(server), 1);
  return port;
}

function ask(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    let text = "";
    socket.on("data", (d: Buffer) => (text += d.toString()));
    socket.on("close", () => resolve(text));
    socket.on("error", () => resolve(text));
  });
}

describe("tunnel proxy", () => {
  it("skips a target that refuses and stays with the one that answered", async () => {
    const dead = await closedPort();
    const b = await namedServer("b");
    const lines: string[] = [];
    proxy = await startTunnelProxy(
      [directTarget("127.0.0.1", dead, 1000), directTarget("127.0.0.1", b.port, 1000)],
      { log: (l) => lines.push(l) },
    );
    expect(await ask(proxy.port)).toBe("b");
    expect(await ask(proxy.port)).toBe("b");
    // Switched once, then kept.
    expect(lines.filter((l) => l.startsWith("now using"))).toEqual([
      `now using 127.0.0.1:${b.port}`,
    ]);
  });

  it("fails over when the target in use goes away", async () => {
    const a = await namedServer("a");
    const b = await namedServer("b");
    proxy = await startTunnelProxy([
      directTarget("127.0.0.1", a.port, 1000),
      directTarget("127.0.0.1", b.port, 1000),
    ]);
    expect(await ask(proxy.port)).toBe("a");
    await new Promise((r) => a.server.close(r));
    servers.splice(servers.indexOf(a.server), 1);
    expect(await ask(proxy.port)).toBe("b");
  });

  it("closes the client's connection when no target answers", async () => {
    const lines: string[] = [];
    proxy = await startTunnelProxy([directTarget("127.0.0.1", await closedPort(), 1000)], {
      log: (l) => lines.push(l),
    });
    expect(await ask(proxy.port)).toBe("");
    expect(lines.join("\n")).toMatch(/no target answers: 127\.0\.0\.1:\d+: /);
  });

  it("needs a target", async () => {
    await expect(startTunnelProxy([])).rejects.toThrow(/at least one target/);
  });
});
