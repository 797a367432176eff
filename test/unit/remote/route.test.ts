import { createServer, type Server } from "node:net";
import type { AddressInfo } from "node:net";
import type { PeerCertificate } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Forward } from "../../../src/remote/host.js";
import { LocalHost } from "../../../src/remote/local.js";
import {
  canConnect,
  isLoopback,
  routeThrough,
  routeURL,
  verifyServerAs,
  type Route,
} from "../../../src/remote/route.js";

// The route decision (direct, or through the node's forwarding) with a Host double whose
// forward() only records what it was asked; the real SSH path is in
// test/integration/remote/route.test.ts.

class ForwardingDouble extends LocalHost {
  override readonly name = "cp-1";
  opened: string[] = [];
  closed: string[] = [];
  failNext = false;
  private nextPort = 40_000;

  forward(targetHost: string, targetPort: number): Promise<Forward> {
    if (this.failNext) {
      this.failNext = false;
      return Promise.reject(new Error("cp-1: the connection dropped"));
    }
    const key = `${targetHost}:${targetPort}`;
    this.opened.push(key);
    const port = this.nextPort++;
    return Promise.resolve({
      port,
      close: () => {
        this.closed.push(key);
        return Promise.resolve();
      },
    });
  }
}

/** A probe that answers from a table and counts its calls. */
function scriptedProbe(reachable: Record<string, boolean>, delayMs = 0) {
  const calls: string[] = [];
  const probe = async (host: string, port: number) => {
    calls.push(`${host}:${port}`);
    if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
    return reachable[`${host}:${port}`] ?? false;
  };
  return { probe, calls };
}

let listener: Server;
let openPort: number;
let closedPort: number;

beforeAll(async () => {
  listener = createServer((s) => s.destroy());
  await new Promise<void>((r) => listener.listen(0, "127.0.0.1", r));
  openPort = (listener.address() as AddressInfo).port;
  const probeClosed = createServer();
  await new Promise<void>((r) => probeClosed.listen(0, "127.0.0.1", r));
  closedPort = (probeClosed.address() as AddressInfo).port;
  await new Promise<void>((r) => probeClosed.close(() => r()));
});

afterAll(async () => {
  await new Promise<void>((r) => listener.close(() => r()));
});

describe("routeThrough", () => {
  it("connects directly for a host without forwarding (the runner itself), loopback included", async () => {
    const route = routeThrough(new LocalHost());
    expect(await route("127.0.0.1", 10248)).toEqual({ host: "127.0.0.1", port: 10248 });
    expect(await route("[fd00::1]", 6443)).toEqual({ host: "fd00::1", port: 6443 });
  });

  it.each(["127.0.0.1", "127.9.9.9", "localhost", "::1", "[::1]", "::ffff:127.0.0.1"])(
    "forwards the node's loopback %s without probing it",
    async (target) => {
      const host = new ForwardingDouble();
      const { probe, calls } = scriptedProbe({});
      const route = routeThrough(host, { probe });
      const to = await route(target, 10257);
      expect(to.host).toBe("127.0.0.1");
      expect(host.opened).toEqual([`${target.replace(/^\[|\]$/g, "")}:10257`]);
      expect(calls).toEqual([]);
    },
  );

  it("keeps a target the runner reaches direct: probed once, no forward opened", async () => {
    const host = new ForwardingDouble();
    const { probe, calls } = scriptedProbe({ "10.0.0.10:6443": true });
    const route = routeThrough(host, { probe });
    for (let i = 0; i < 3; i++) {
      expect(await route("10.0.0.10", 6443)).toEqual({ host: "10.0.0.10", port: 6443 });
    }
    expect(calls).toEqual(["10.0.0.10:6443"]);
    expect(host.opened).toEqual([]);
  });

  it("forwards a target the runner cannot reach, one forward per target", async () => {
    const host = new ForwardingDouble();
    const { probe } = scriptedProbe({});
    const route = routeThrough(host, { probe });
    const [a, b, c] = await Promise.all([
      route("10.0.0.10", 6443),
      route("10.0.0.10", 6443),
      route("10.0.0.10", 2379),
    ]);
    expect(a).toEqual(b);
    expect(a.host).toBe("127.0.0.1");
    expect(c.port).not.toBe(a.port);
    expect(host.opened).toEqual(["10.0.0.10:6443", "10.0.0.10:2379"]);
  });

  it("asks a fast refusal again after reprobeAfterMs, a silent target never", async () => {
    let clock = 0;
    const host = new ForwardingDouble();
    const reachable: Record<string, boolean> = {};
    const { probe, calls } = scriptedProbe(reachable);
    const route = routeThrough(host, { probe, reprobeAfterMs: 1_000, now: () => clock });
    expect((await route("10.0.0.10", 6443)).host).toBe("127.0.0.1");
    reachable["10.0.0.10:6443"] = true; // the API server has started
    clock = 500;
    expect((await route("10.0.0.10", 6443)).host).toBe("127.0.0.1");
    clock = 1_500;
    expect(await route("10.0.0.10", 6443)).toEqual({ host: "10.0.0.10", port: 6443 });
    expect(calls).toEqual(["10.0.0.10:6443", "10.0.0.10:6443"]);

    // A probe that used its whole timeout met a silent firewall: final.
    const slow = scriptedProbe({}, 30);
    const silent = routeThrough(new ForwardingDouble(), {
      probe: slow.probe,
      probeTimeoutMs: 20,
      reprobeAfterMs: 0,
    });
    await silent("10.0.0.11", 6443);
    await silent("10.0.0.11", 6443);
    expect(slow.calls).toEqual(["10.0.0.11:6443"]);
  });

  it("does not keep a forward that failed to open", async () => {
    const host = new ForwardingDouble();
    const route = routeThrough(host, { probe: () => Promise.resolve(false) });
    host.failNext = true;
    await expect(route("10.0.0.10", 6443)).rejects.toThrow("the connection dropped");
    expect((await route("10.0.0.10", 6443)).host).toBe("127.0.0.1");
    expect(host.opened).toEqual(["10.0.0.10:6443"]);
  });

  it("close() ends its forwards; the route opens new ones afterwards", async () => {
    const host = new ForwardingDouble();
    const route = routeThrough(host, { probe: () => Promise.resolve(false) });
    await route("10.0.0.10", 6443);
    await route("127.0.0.1", 10248);
    await route.close();
    expect(host.closed.sort()).toEqual(["10.0.0.10:6443", "127.0.0.1:10248"]);
    await route("10.0.0.10", 6443);
    expect(host.opened).toEqual(["10.0.0.10:6443", "127.0.0.1:10248", "10.0.0.10:6443"]);
  });

  it("gives every caller the host's shared route unless options are given", () => {
    const host = new ForwardingDouble();
    expect(routeThrough(host)).toBe(routeThrough(host));
    expect(routeThrough(host, {})).not.toBe(routeThrough(host));
    expect(routeThrough(new ForwardingDouble())).not.toBe(routeThrough(host));
  });
});

describe("canConnect", () => {
  it("is true for a listening port and false for a closed one", async () => {
    expect(await canConnect("127.0.0.1", openPort, 1_000)).toBe(true);
    expect(await canConnect("127.0.0.1", closedPort, 1_000)).toBe(false);
  });

  it("gives up after its timeout on an address that never answers", async () => {
    const started = Date.now();
    // 192.0.2.0/24 is TEST-NET-1: unrouted (no answer) or unreachable, never accepted.
    expect(await canConnect("192.0.2.1", 6443, 300)).toBe(false);
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});

describe("isLoopback", () => {
  it.each([
    ["127.0.0.1", true],
    ["127.1.2.3", true],
    ["::1", true],
    ["LOCALHOST", true],
    ["::ffff:127.0.0.1", true],
    ["10.0.0.1", false],
    ["fd00::1", false],
    ["api.example.com", false],
  ])("%s → %s", (host, expected) => expect(isLoopback(host)).toBe(expected));
});

describe("verifyServerAs", () => {
  const certFor = (san: string) => ({ subject: {}, subjectaltname: san }) as PeerCertificate;

  it("adds nothing when the connection goes where it was meant to", () => {
    expect(verifyServerAs("10.0.0.10", "10.0.0.10")).toEqual({});
  });

  it("sends a DNS name as SNI (Node verifies against servername)", () => {
    expect(verifyServerAs("api.example.com", "127.0.0.1")).toEqual({
      servername: "api.example.com",
    });
  });

  it("checks an IP against the certificate's IP SANs, not the routed 127.0.0.1", () => {
    const { checkServerIdentity, servername } = verifyServerAs("10.0.0.10", "127.0.0.1");
    expect(servername).toBeUndefined();
    expect(checkServerIdentity!("127.0.0.1", certFor("IP Address:10.0.0.10"))).toBeUndefined();
    expect(checkServerIdentity!("127.0.0.1", certFor("IP Address:127.0.0.1"))).toBeInstanceOf(
      Error,
    );
    const v6 = verifyServerAs("[fd00::10]", "127.0.0.1").checkServerIdentity!;
    expect(v6("127.0.0.1", certFor("IP Address:FD00:0:0:0:0:0:0:10"))).toBeUndefined();
  });
});

describe("routeURL", () => {
  const to40000: Route = () => Promise.resolve({ host: "127.0.0.1", port: 40_000 });
  it.each([
    ["https://10.0.0.10:6443", "https://127.0.0.1:40000", "10.0.0.10"],
    ["https://10.0.0.10:6443/", "https://127.0.0.1:40000/", "10.0.0.10"],
    ["https://[fd00::10]:6443/livez?verbose", "https://127.0.0.1:40000/livez?verbose", "fd00::10"],
    ["http://127.0.0.1:10248/healthz", "http://127.0.0.1:40000/healthz", "127.0.0.1"],
    ["https://api.example.com/readyz", "https://127.0.0.1:40000/readyz", "api.example.com"],
  ])("%s → %s", async (url, routed, original) => {
    expect(await routeURL(to40000, url)).toEqual({ url: routed, original, routed: "127.0.0.1" });
  });

  it("asks the route for the scheme's default port and keeps a direct URL as given", async () => {
    const asked: string[] = [];
    const direct: Route = (host, port) => {
      asked.push(`${host}:${port}`);
      return Promise.resolve({ host, port });
    };
    const url = "https://api.example.com/readyz";
    expect((await routeURL(direct, url)).url).toBe(url);
    await routeURL(direct, "http://10.0.0.1/x");
    expect(asked).toEqual(["api.example.com:443", "10.0.0.1:80"]);
  });
});
