import { describe, expect, it } from "vitest";
import {
  cidrsOverlap,
  formatIP,
  goSplitHostPort,
  hostPortOf,
  indexedIP,
  ipFamily,
  joinHostPort,
  loopbackFor,
  parseCIDR,
  parseHostPort,
  parseIP,
  splitCIDRs,
} from "../../../src/config/network.js";

describe("parseIP (Go net.ParseIP rules)", () => {
  it.each([
    ["10.0.0.1", 4],
    ["::1", 6],
    ["fd00::2", 6],
    ["::ffff:10.0.0.1", 4], // IPv4-mapped is IPv4 in Go
    ["0:0:0:0:0:ffff:0:1", 4],
    ["::fffe:10.0.0.1", 6],
    ["1::ffff:10.0.0.1", 6],
    ["::ffff:0:10.0.0.1", 6], // RFC 6145's IPv4-translated, not mapped
  ])("accepts %s as IPv%s", (text, family) => {
    expect(ipFamily(text)).toBe(family);
  });

  it.each(["10", "10.0.0", "010.1.1.1", "1.2.3.256", "fe80::1%eth0", "", "host", "1.2.3.4/8"])(
    "refuses %j",
    (text) => {
      expect(parseIP(text)).toBeUndefined();
    },
  );

  it("keeps an IPv4-mapped address as its IPv4 address", () => {
    expect(formatIP("::ffff:10.0.0.1")).toBe("10.0.0.1");
    expect(formatIP("::ffff:0a00:0001")).toBe("10.0.0.1");
  });

  it("prints IPv6 compressed", () => {
    expect(formatIP("fd00:0:0:0:0:0:0:1")).toBe("fd00::1");
  });
});

describe("CIDRs", () => {
  it("parses and clears host bits", () => {
    expect(parseCIDR("10.96.0.1/12")).toMatchObject({
      network: "10.96.0.0",
      prefix: 12,
      family: 4,
    });
    expect(parseCIDR("fd00::5/108")).toMatchObject({ network: "fd00::", prefix: 108, family: 6 });
    expect(parseCIDR("10.0.0.0/33")).toBeUndefined();
    expect(parseCIDR("10.0.0.0")).toBeUndefined();
  });

  // kubeadm: constants.GetDNSIP / GetAPIServerVirtualIP (k8s.io/utils/net GetIndexedIP).
  it.each([
    ["10.96.0.0/12", 1, "10.96.0.1"],
    ["10.96.0.0/12", 10, "10.96.0.10"],
    ["172.30.0.0/16", 10, "172.30.0.10"],
    ["fd00:10:96::/112", 10, "fd00:10:96::a"],
    ["2001:db8::/108", 1, "2001:db8::1"],
  ])("indexedIP(%s, %d) = %s", (cidr, index, ip) => {
    expect(indexedIP(cidr, index)).toBe(ip);
  });

  it("refuses an index outside the range", () => {
    expect(() => indexedIP("10.0.0.0/29", 10)).toThrow("has no address with index 10");
  });

  it.each([
    ["10.96.0.0/12", "10.96.0.0/16", true],
    ["10.244.0.0/16", "10.96.0.0/12", false],
    ["10.0.0.0/8", "10.96.0.0/12", true],
    ["fd00::/64", "fd00::/112", true],
    ["10.0.0.0/8", "fd00::/64", false],
  ])("overlap(%s, %s) = %s", (a, b, expected) => {
    expect(cidrsOverlap(a, b)).toBe(expected);
    expect(cidrsOverlap(b, a)).toBe(expected);
  });

  it("splits comma-separated lists", () => {
    expect(splitCIDRs("10.244.0.0/16,fd00::/56")).toEqual(["10.244.0.0/16", "fd00::/56"]);
  });
});

describe("host:port", () => {
  it("brackets IPv6 literals", () => {
    expect(joinHostPort("fd00::1", 6443)).toBe("[fd00::1]:6443");
    expect(joinHostPort("10.0.0.1", 6443)).toBe("10.0.0.1:6443");
    expect(joinHostPort("cp.example.com", "443")).toBe("cp.example.com:443");
  });

  it.each([
    ["cp.example.com:6443", { host: "cp.example.com", port: 6443 }],
    ["cp.example.com", { host: "cp.example.com", port: undefined }],
    ["[fd00::1]:6443", { host: "fd00::1", port: 6443 }],
    ["fd00::1", { host: "fd00::1", port: undefined }],
    ["10.0.0.1:0", { problem: "port 0 must be a number between 1 and 65535" }],
    ["10.0.0.1:65536", { problem: "port 65536 must be a number between 1 and 65535" }],
    ["10.0.0.1:http", { problem: "port http must be a number between 1 and 65535" }],
    // kubeadm: an empty port is no port; "[v6]" alone is not split by Go, so all of it is the host.
    ["cp.example.com:", { host: "cp.example.com", port: undefined }],
    [
      "[fd00::1]",
      { problem: 'host "[fd00::1]" must be a valid IP address or a valid RFC-1123 DNS subdomain' },
    ],
    [
      "cp_1:6443",
      { problem: 'host "cp_1" must be a valid IP address or a valid RFC-1123 DNS subdomain' },
    ],
  ])("parseHostPort(%j)", (text, expected) => {
    expect(parseHostPort(text)).toEqual(expected);
  });

  it.each([
    ["[::1]:80", { host: "::1", port: "80" }],
    ["host:", { host: "host", port: "" }],
    [":80", { host: "", port: "80" }],
    ["host", undefined],
    ["fd00::1", undefined],
    ["[::1]", undefined],
    ["[::1]:80:90", undefined],
    ["a[b:80", undefined],
  ])("goSplitHostPort(%j) as Go's net.SplitHostPort", (text, expected) => {
    expect(goSplitHostPort(text)).toEqual(expected);
  });

  it("names the field of an invalid address", () => {
    expect(hostPortOf("[fd00::1]:6443", "controlPlaneEndpoint")).toEqual({
      host: "fd00::1",
      port: 6443,
    });
    expect(() => hostPortOf("api:99999", "controlPlaneEndpoint")).toThrow(
      'controlPlaneEndpoint "api:99999" is not a valid address: port 99999 must be a number between 1 and 65535',
    );
  });

  it("uses the loopback of the same family", () => {
    expect(loopbackFor("fd00::2")).toBe("::1");
    expect(loopbackFor("192.0.2.2")).toBe("127.0.0.1");
  });
});
