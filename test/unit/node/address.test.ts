import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  detectAdvertiseAddress,
  detectNodeIPs,
  otherFamilyAddress,
  parseIPv4DefaultRoutes,
  parseIPv6DefaultRoutes,
} from "../../../src/node/address.js";
import type { ExecResult, Host } from "../../../src/remote/host.js";
import { LocalHost } from "../../../src/remote/local.js";

const V4_HEADER =
  "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n";
const V4_DEFAULT_ETH0 = `${V4_HEADER}eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\neth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n`;
const V4_NO_DEFAULT = `${V4_HEADER}eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n`;
const V6_DEFAULT_ETH0 =
  "00000000000000000000000000000000 00 00000000000000000000000000000000 00 fd000000000000000000000000000001 00000400 00000002 00000000 00000003     eth0\n" +
  "00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo\n";

interface Link {
  ifname: string;
  flags: string[];
  addr_info: { family: string; local: string }[];
}
const lo = (extra: { family: string; local: string }[] = []): Link => ({
  ifname: "lo",
  flags: ["LOOPBACK", "UP", "LOWER_UP"],
  addr_info: [{ family: "inet", local: "127.0.0.1" }, { family: "inet6", local: "::1" }, ...extra],
});
const eth0 = (addrs: { family: string; local: string }[], up = true): Link => ({
  ifname: "eth0",
  flags: up ? ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"] : ["BROADCAST", "MULTICAST"],
  addr_info: addrs,
});

/** A Host double: only the files and the one command address detection reads. */
function fakeHost(
  files: Record<string, string>,
  links: Link[],
  ipResult?: ExecResult,
): Host & { calls: string[][] } {
  const calls: string[][] = [];
  const host = {
    name: "fake",
    calls,
    exists: (p: string) => Promise.resolve(p in files),
    readFile: (p: string) =>
      p in files
        ? Promise.resolve(Buffer.from(files[p]!))
        : Promise.reject(Object.assign(new Error(`ENOENT ${p}`), { code: "ENOENT" })),
    exec: (argv: string[], opts?: { readOnly?: boolean }) => {
      calls.push(argv);
      expect(opts?.readOnly).toBe(true);
      return Promise.resolve(ipResult ?? { code: 0, stdout: JSON.stringify(links), stderr: "" });
    },
  };
  return host as unknown as Host & { calls: string[][] };
}

describe("route parsing", () => {
  it("reads default routes from /proc/net/route and /proc/net/ipv6_route", () => {
    expect(parseIPv4DefaultRoutes(V4_DEFAULT_ETH0)).toEqual([
      { iface: "eth0", family: 4, gateway: "192.0.2.1" },
    ]);
    expect(parseIPv4DefaultRoutes(V4_NO_DEFAULT)).toEqual([]);
    // The lo route without a gateway is not a default route (apimachinery getIPv6DefaultRoutes).
    expect(parseIPv6DefaultRoutes(V6_DEFAULT_ETH0)).toEqual([
      { iface: "eth0", family: 6, gateway: "fd00::1" },
    ]);
  });
});

describe("detectAdvertiseAddress on this machine", () => {
  it("returns a global address of the default route's interface, as `ip route get` agrees", async () => {
    const address = await detectAdvertiseAddress(new LocalHost());
    const routes = parseIPv4DefaultRoutes(readFileSync("/proc/net/route", "utf8"));
    expect(routes.length).toBeGreaterThan(0);
    // The kernel's own answer for traffic leaving through the default route.
    const src = /\bsrc (\S+)/.exec(
      execFileSync("ip", ["-4", "route", "get", routes[0]!.gateway], { encoding: "utf8" }),
    )?.[1];
    expect(address).toBe(src);
  });
});

describe("detectAdvertiseAddress with a Host double (ChooseHostInterface rules)", () => {
  const v4 = { family: "inet", local: "192.0.2.2" };
  const v6 = { family: "inet6", local: "fd00::2" };
  const linkLocal6 = { family: "inet6", local: "fe80::1" };

  it("prefers IPv4 on the default-route interface, skipping link-local addresses", async () => {
    const host = fakeHost(
      { "/proc/net/route": V4_DEFAULT_ETH0, "/proc/net/ipv6_route": V6_DEFAULT_ETH0 },
      [lo(), eth0([linkLocal6, v6, v4])],
    );
    await expect(detectAdvertiseAddress(host)).resolves.toBe("192.0.2.2");
    expect(host.calls).toEqual([["ip", "-j", "addr", "show"]]);
  });

  it("uses IPv6 when only an IPv6 default route exists", async () => {
    const host = fakeHost(
      { "/proc/net/route": V4_NO_DEFAULT, "/proc/net/ipv6_route": V6_DEFAULT_ETH0 },
      [lo(), eth0([linkLocal6, v6])],
    );
    await expect(detectAdvertiseAddress(host)).resolves.toBe("fd00::2");
  });

  it("takes a global address from lo when the route's interface has only link-local ones (RFC 5549)", async () => {
    const host = fakeHost(
      { "/proc/net/route": V4_HEADER, "/proc/net/ipv6_route": V6_DEFAULT_ETH0 },
      [lo([{ family: "inet6", local: "2001:db8::5" }]), eth0([linkLocal6])],
    );
    await expect(detectAdvertiseAddress(host)).resolves.toBe("2001:db8::5");
  });

  it("fails with a clear sentence when there is no default route", async () => {
    const host = fakeHost({ "/proc/net/route": V4_NO_DEFAULT }, [lo(), eth0([v4])]);
    await expect(detectAdvertiseAddress(host)).rejects.toThrow(
      "fake: there is no default route in /proc/net/route or /proc/net/ipv6_route, so the API server's advertise address cannot be chosen; set --apiserver-advertise-address",
    );
  });

  it("fails naming the interface when it is down", async () => {
    const host = fakeHost({ "/proc/net/route": V4_DEFAULT_ETH0 }, [lo(), eth0([v4], false)]);
    await expect(detectAdvertiseAddress(host)).rejects.toThrow(
      "the default route's interface (eth0) has no global unicast address that is up",
    );
  });

  it("falls back to any interface's global address without a routing table", async () => {
    const host = fakeHost({}, [lo(), eth0([v6, v4])]);
    await expect(detectAdvertiseAddress(host)).resolves.toBe("192.0.2.2");
  });

  it("reports a failing ip command", async () => {
    const host = fakeHost({ "/proc/net/route": V4_DEFAULT_ETH0 }, [], {
      code: 127,
      stdout: "",
      stderr: "ip: not found",
    });
    await expect(detectAdvertiseAddress(host)).rejects.toThrow(
      '"ip -j addr show" exited with code 127: ip: not found',
    );
  });
});

// Dual-stack nodes: the kubelet's node-ip pair (kubeadm docs, "Dual-stack support with kubeadm")
// needs the node's address of the other family; kubeforge takes the global one on the interface
// that holds the first address, as kubeadm's ChooseHostInterface takes a family's first global
// address of an interface.
describe("detectNodeIPs with a Host double", () => {
  const v4 = { family: "inet", local: "192.0.2.2" };
  const v6 = { family: "inet6", local: "2001:db8::2" };
  const linkLocal6 = { family: "inet6", local: "fe80::1" };
  const routes = { "/proc/net/route": V4_DEFAULT_ETH0 };

  it("pairs the detected address with the other family's global address on its interface", async () => {
    const host = fakeHost(routes, [
      lo([{ family: "inet6", local: "2001:db8::99" }]),
      eth0([linkLocal6, v4, v6]),
    ]);
    await expect(detectNodeIPs(host, [])).resolves.toEqual(["192.0.2.2", "2001:db8::2"]);
  });

  it("pairs a given address, IPv6 or IPv4, without reading the routes", async () => {
    const host = fakeHost({}, [lo(), eth0([v4, linkLocal6, v6])]);
    await expect(detectNodeIPs(host, ["2001:db8:0::2"])).resolves.toEqual([
      "2001:db8:0::2",
      "192.0.2.2",
    ]);
    await expect(detectNodeIPs(host, ["192.0.2.2"])).resolves.toEqual(["192.0.2.2", "2001:db8::2"]);
  });

  it("uses a given pair as it is, running nothing", async () => {
    const host = fakeHost({}, []);
    await expect(detectNodeIPs(host, ["2001:db8::2", "192.0.2.2"])).resolves.toEqual([
      "2001:db8::2",
      "192.0.2.2",
    ]);
    expect(host.calls).toEqual([]);
  });

  it("fails naming the host and the interface when there is no address of the other family", async () => {
    const host = fakeHost(routes, [lo(), eth0([linkLocal6, v4])]);
    await expect(detectNodeIPs(host, [])).rejects.toThrow(
      'fake: a dual-stack cluster needs an IPv4 and an IPv6 address on every node, and eth0 (which holds 192.0.2.2) has no global IPv6 address; give the host an address of that family, or set the node\'s address to its pair ("192.0.2.10,2001:db8::10")',
    );
  });

  it("fails when no interface holds the given address", () => {
    expect(otherFamilyAddress([lo(), eth0([v4, v6])], "198.51.100.7")).toEqual({
      problem: "no interface holds 198.51.100.7",
    });
    expect(otherFamilyAddress([lo(), eth0([v4, v6], false)], "192.0.2.2")).toEqual({
      problem: "eth0 (which holds 192.0.2.2) has no global IPv6 address that is up",
    });
  });
});
