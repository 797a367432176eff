import { describe, expect, it } from "vitest";
import {
  cidrsOverlap,
  formatIP,
  indexedIP,
  ipFamily,
  joinHostPort,
  loopbackFor,
  parseCIDR,
  parseIP,
  splitCIDRs,
  splitHostPort,
} from "../../../src/config/network.js";

describe("parseIP (Go net.ParseIP rules)", () => {
  it.each([
    ["10.0.0.1", 4],
    ["::1", 6],
    ["fd00::2", 6],
    ["::ffff:10.0.0.1", 4], // IPv4-mapped is IPv4 in Go
  ])("accepts %s as IPv%s", (text, family) => {
    expect(ipFamily(text)).toBe(family);
  });

  it.each(["10", "10.0.0", "010.1.1.1", "1.2.3.256", "fe80::1%eth0", "", "host", "1.2.3.4/8"])(
    "refuses %j",
    (text) => {
      expect(parseIP(text)).toBeUndefined();
    },
  );

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
    ["10.0.0.1:0", undefined],
    ["10.0.0.1:65536", undefined],
    ["10.0.0.1:http", undefined],
  ])("splitHostPort(%j)", (text, expected) => {
    expect(splitHostPort(text)).toEqual(expected);
  });

  it("uses the loopback of the same family", () => {
    expect(loopbackFor("fd00::2")).toBe("::1");
    expect(loopbackFor("192.0.2.2")).toBe("127.0.0.1");
  });
});
