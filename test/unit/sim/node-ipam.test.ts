// The simulated node IPAM range allocator: known answers from Kubernetes' own tests
// (pkg/controller/nodeipam/ipam/cidrset/cidr_set_test.go: TestIndexToCIDRBlock,
// TestCIDRSetFullyAllocated, TestCIDRSet_AllocationOccupied, TestDoubleOccupyRelease), the
// kube-controller-manager flag rules (cmd/kube-controller-manager/app/core.go setNodeCIDRMaskSizes,
// validateCIDRs) and the allocator's bookkeeping (service range kept out, re-list, release).
import { describe, expect, it } from "vitest";
import { CidrSet, NO_CIDRS_REMAINING } from "../../support/sim/apiserver/controllers/cidr-set.js";
import {
  nodeIpamConfig,
  RangeAllocator,
  type NodeIpamFlags,
} from "../../support/sim/apiserver/controllers/node-ipam.js";
import type { StoredObject } from "../../support/sim/apiserver/store.js";

describe("CidrSet", () => {
  it.each([
    ["127.123.3.0/16", 24, 0, "127.123.0.0/24"],
    ["127.123.0.0/16", 24, 15, "127.123.15.0/24"],
    ["192.168.5.219/28", 32, 5, "192.168.5.213/32"],
    ["2001:0db8:1234:3::/48", 64, 0, "2001:db8:1234::/64"],
    ["2001:0db8:1234::/48", 64, 15, "2001:db8:1234:f::/64"],
    ["2001:0db8:85a3::8a2e:0370:7334/50", 63, 6425, "2001:db8:85a3:3232::/63"],
    ["2001:0db8::/32", 48, 15, "2001:db8:f::/48"],
    ["2001:0db8:85a3::8a2e:0370:7334/32", 48, 6425, "2001:db8:1919::/48"],
    ["2001:0db8:1234:ff00::0370:7334/56", 72, 15, "2001:db8:1234:ff00:f00::/72"],
    ["2001:0db8:1234:ff00::0370:7334/56", 72, 6425, "2001:db8:1234:ff19:1900::/72"],
    ["2001:0db8:1234:0:1234::/80", 96, 15, "2001:db8:1234:0:1234:f::/96"],
    ["2001:0db8:1234:ff00::0370:7334/80", 96, 6425, "2001:db8:1234:ff00:0:1919::/96"],
  ])("%s /%i: block %i is %s", (cluster, mask, index, want) => {
    expect(new CidrSet(cluster, mask).cidrAt(index)).toBe(want);
  });

  it.each([
    ["127.123.234.0/30", 30, "127.123.234.0/30"],
    ["beef:1234::/30", 30, "beef:1234::/30"],
  ])("%s /%i: one block, handed out again once released", (cluster, mask, want) => {
    const s = new CidrSet(cluster, mask);
    expect(s.allocateNext()).toBe(want);
    expect(() => s.allocateNext()).toThrow(NO_CIDRS_REMAINING);
    s.release(want);
    expect(s.allocateNext()).toBe(want);
    expect(() => s.allocateNext()).toThrow(NO_CIDRS_REMAINING);
  });

  it("hands out the next block after the last one, not a freed one, until it wraps around", () => {
    const s = new CidrSet("10.244.0.0/22", 24);
    expect([s.allocateNext(), s.allocateNext(), s.allocateNext()]).toEqual([
      "10.244.0.0/24",
      "10.244.1.0/24",
      "10.244.2.0/24",
    ]);
    s.release("10.244.1.0/24");
    expect(s.allocateNext()).toBe("10.244.3.0/24");
    expect(s.allocateNext()).toBe("10.244.1.0/24");
    expect(() => s.allocateNext()).toThrow(NO_CIDRS_REMAINING);
  });

  it.each(["127.123.234.0/16", "beef:1234::/16"])(
    "%s: occupied blocks are skipped (TestCIDRSet_AllocationOccupied)",
    (cluster) => {
      const s = new CidrSet(cluster, 24);
      const all = Array.from({ length: 256 }, () => s.allocateNext());
      expect(new Set(all).size).toBe(256);
      for (const c of all) s.release(c);
      for (const c of all.slice(128)) s.occupy(c);
      s.occupy(all[128]!);
      const again = Array.from({ length: 128 }, () => s.allocateNext());
      expect(() => s.allocateNext()).toThrow(NO_CIDRS_REMAINING);
      expect([...again, ...all.slice(128)]).toEqual(all);
    },
  );

  it("counts overlapping occupy and release like TestDoubleOccupyRelease", () => {
    const s = new CidrSet("10.42.0.0/16", 24);
    const steps: [string, "occupy" | "release", number][] = [
      ["10.42.5.0/24", "occupy", 1],
      ["10.42.9.0/24", "occupy", 2],
      ["10.42.8.0/22", "occupy", 5],
      ["10.42.9.0/24", "occupy", 5],
      ["10.42.9.0/24", "release", 4],
      ["10.42.9.0/24", "release", 4],
      ["10.42.4.0/22", "release", 3],
    ];
    for (const [cidr, op, count] of steps) {
      s[op](cidr);
      expect(s.allocated).toBe(count);
    }
    for (let i = 0; i < 256 - 3; i++) s.allocateNext();
    expect(() => s.allocateNext()).toThrow(NO_CIDRS_REMAINING);
  });

  it("refuses CIDRs outside the cluster range and node masks shorter than the cluster's", () => {
    const s = new CidrSet("192.168.0.0/16", 24);
    expect(() => s.occupy("127.168.224.0/24")).toThrow(/out the range of cluster cidr/);
    expect(() => s.occupy("2001:db8::/64")).toThrow(/out the range of cluster cidr/);
    expect(() => new CidrSet("10.0.0.0/16", 8)).toThrow(/mask size of cluster CIDR/);
    expect(() => new CidrSet("fd00::/48", 112)).toThrow(/node CIDR size is too big/);
  });
});

describe("node-ipam-controller flags", () => {
  const cases: { name: string; flags: NodeIpamFlags; want: unknown }[] = [
    { name: "off", flags: { clusterCIDR: "10.244.0.0/16" }, want: undefined },
    {
      name: "kubeadm's IPv4 pod subnet",
      flags: {
        allocateNodeCIDRs: true,
        clusterCIDR: "10.244.0.0/16",
        serviceClusterIPRange: "10.96.0.0/12",
      },
      want: {
        clusterCIDRs: ["10.244.0.0/16"],
        nodeMaskSizes: [24],
        serviceCIDRs: ["10.96.0.0/12"],
      },
    },
    {
      name: "IPv6 single stack",
      flags: { allocateNodeCIDRs: true, clusterCIDR: "fd00:244::/56" },
      want: { clusterCIDRs: ["fd00:244::/56"], nodeMaskSizes: [64], serviceCIDRs: [] },
    },
    {
      name: "--node-cidr-mask-size, single stack",
      flags: { allocateNodeCIDRs: true, clusterCIDR: "10.244.0.0/16", nodeCIDRMaskSize: 26 },
      want: { clusterCIDRs: ["10.244.0.0/16"], nodeMaskSizes: [26], serviceCIDRs: [] },
    },
    {
      name: "dual stack with per-family masks",
      flags: {
        allocateNodeCIDRs: true,
        clusterCIDR: "10.244.0.0/16,fd00:244::/56",
        nodeCIDRMaskSizeIPv4: 25,
      },
      want: {
        clusterCIDRs: ["10.244.0.0/16", "fd00:244::/56"],
        nodeMaskSizes: [25, 64],
        serviceCIDRs: [],
      },
    },
    {
      name: "no --cluster-cidr",
      flags: { allocateNodeCIDRs: true },
      want: /--cluster-cidr= is not a list of CIDRs/,
    },
    {
      name: "two CIDRs of one family",
      flags: { allocateNodeCIDRs: true, clusterCIDR: "10.244.0.0/16,10.245.0.0/16" },
      want: /not configured as dual stack/,
    },
    {
      name: "--node-cidr-mask-size in dual stack",
      flags: {
        allocateNodeCIDRs: true,
        clusterCIDR: "10.244.0.0/16,fd00:244::/56",
        nodeCIDRMaskSize: 24,
      },
      want: /--node-cidr-mask-size is not allowed with dual-stack clusters/,
    },
    {
      name: "--node-cidr-mask-size-ipv6 on an IPv4 cluster",
      flags: { allocateNodeCIDRs: true, clusterCIDR: "10.244.0.0/16", nodeCIDRMaskSizeIPv6: 64 },
      want: /not allowed for a single-stack IPv4 cluster/,
    },
  ];
  it.each(cases)("$name", ({ flags, want }) => {
    if (want instanceof RegExp) expect(() => nodeIpamConfig(flags)).toThrow(want);
    else expect(nodeIpamConfig(flags)).toEqual(want);
  });
});

function node(name: string, podCIDRs?: string[]): StoredObject {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name },
    spec: podCIDRs ? { podCIDR: podCIDRs[0], podCIDRs } : {},
  };
}

describe("RangeAllocator", () => {
  it("keeps an overlapping service range out and occupies what listed nodes carry", () => {
    const a = new RangeAllocator({
      clusterCIDRs: ["10.96.0.0/22"],
      nodeMaskSizes: [24],
      serviceCIDRs: ["10.96.0.0/24", "192.168.0.0/16"],
    });
    expect(a.resync([node("a", ["10.96.2.0/24"]), node("b")])).toEqual([]);
    expect(a.allocate()).toEqual(["10.96.1.0/24"]);
    expect(a.allocate()).toEqual(["10.96.3.0/24"]);
    expect(() => a.allocate()).toThrow(NO_CIDRS_REMAINING);
  });

  it("allocates one block per family, all or nothing", () => {
    const a = new RangeAllocator({
      clusterCIDRs: ["10.244.0.0/24", "fd00:244::/64"],
      nodeMaskSizes: [24, 64],
      serviceCIDRs: [],
    });
    expect(a.allocate()).toEqual(["10.244.0.0/24", "fd00:244::/64"]);
    a.release(node("gone", ["10.244.0.0/24", "fd00:244::/64"]));
    expect(a.allocate()).toEqual(["10.244.0.0/24", "fd00:244::/64"]);
  });

  it("reports CIDRs it cannot account for, and forgets deleted nodes' blocks on a re-list", () => {
    const a = new RangeAllocator({
      clusterCIDRs: ["10.244.0.0/23"],
      nodeMaskSizes: [24],
      serviceCIDRs: [],
    });
    expect(
      a.resync([
        node("a", ["10.244.0.0/24"]),
        node("x", ["10.0.0.0/24"]),
        node("y", ["10.244.1.0/24", "fd00::/64"]),
      ]),
    ).toEqual([
      "failed to mark cidr[10.0.0.0/24] at idx [0] as occupied for node: x: cidr 10.0.0.0/24 is out the range of cluster cidr 10.244.0.0/23",
      "node:y has an allocated cidr: fd00::/64 at index:1 that does not exist in cluster cidrs configuration",
    ]);
    expect(() => a.allocate()).toThrow(NO_CIDRS_REMAINING);
    a.resync([node("y", ["10.244.1.0/24"])]);
    expect(a.allocate()).toEqual(["10.244.0.0/24"]);
  });
});
