import { describe, expect, it } from "vitest";
import { bridgeConfList, podRoutes } from "../../../src/node/cni/bridge.js";

describe("bridgeConfList", () => {
  it("gives host-local IPAM the node's pod CIDRs, one range per family", () => {
    const conf = JSON.parse(bridgeConfList(["10.244.1.0/24", "fd00:10:244:1::/64"])) as {
      cniVersion: string;
      plugins: { type: string; ipam?: { ranges: unknown; routes: unknown } }[];
    };
    expect(conf.cniVersion).toBe("1.0.0");
    expect(conf.plugins.map((p) => p.type)).toEqual(["bridge", "portmap"]);
    expect(conf.plugins[0]!.ipam).toEqual({
      type: "host-local",
      ranges: [[{ subnet: "10.244.1.0/24" }], [{ subnet: "fd00:10:244:1::/64" }]],
      routes: [{ dst: "0.0.0.0/0" }, { dst: "::/0" }],
    });
  });

  it("refuses a node without a pod CIDR and a malformed one", () => {
    expect(() => bridgeConfList([])).toThrow(/needs the node's pod CIDR/);
    expect(() => bridgeConfList(["10.244.1.0"])).toThrow(/"10.244.1.0" is not a CIDR/);
  });
});

describe("podRoutes", () => {
  it("routes every other node's pod CIDR of the same family through its address", () => {
    const nodes = [
      { name: "a", address: "10.0.0.1", podCIDRs: ["10.244.0.0/24", "fd00::/64"] },
      { name: "b", address: "10.0.0.2", podCIDRs: ["10.244.1.0/24", "fd00:0:0:1::/64"] },
      { name: "c", address: "10.0.0.3", podCIDRs: ["10.244.2.0/24"] },
    ];
    expect(podRoutes("a", nodes)).toEqual([
      ["ip", "-4", "route", "replace", "10.244.1.0/24", "via", "10.0.0.2"],
      ["ip", "-4", "route", "replace", "10.244.2.0/24", "via", "10.0.0.3"],
    ]);
  });
});
