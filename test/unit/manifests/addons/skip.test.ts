import { describe, expect, it } from "vitest";
import { syncSkippedAddons } from "../../../../src/manifests/addons/skip.js";

describe("dns/proxy.disabled and --skip-phases stay in step (kubeadm's manageSkippedAddons)", () => {
  it.each([
    ["nothing disabled or skipped", {}, {}, [], [false, false, []]],
    ["skipping addon disables both", {}, {}, ["addon"], [true, true, ["addon"]]],
    [
      "skipping addon/coredns disables CoreDNS",
      {},
      {},
      ["addon/coredns"],
      [true, false, ["addon/coredns"]],
    ],
    [
      "skipping addon/kube-proxy disables kube-proxy",
      {},
      {},
      ["preflight", "addon/kube-proxy"],
      [false, true, ["preflight", "addon/kube-proxy"]],
    ],
    [
      "dns.disabled skips addon/coredns",
      { disabled: true },
      {},
      [],
      [true, false, ["addon/coredns"]],
    ],
    [
      "proxy.disabled skips addon/kube-proxy",
      {},
      { disabled: true },
      ["certs"],
      [false, true, ["certs", "addon/kube-proxy"]],
    ],
    [
      "both disabled, addon skipped: nothing appended",
      { disabled: true },
      { disabled: true },
      ["addon"],
      [true, true, ["addon"]],
    ],
    [
      "disabled and already skipped: not appended twice",
      { disabled: true },
      { disabled: true },
      ["addon/coredns"],
      [true, true, ["addon/coredns", "addon/kube-proxy"]],
    ],
  ] as const)("%s", (_, dns, proxy, skip, [dnsDisabled, proxyDisabled, skipPhases]) => {
    expect(syncSkippedAddons({ dns, proxy }, skip)).toEqual({
      dnsDisabled,
      proxyDisabled,
      skipPhases,
    });
  });

  it("does not change the list it is given", () => {
    const skip = ["certs"];
    syncSkippedAddons({ dns: { disabled: true }, proxy: {} }, skip);
    expect(skip).toEqual(["certs"]);
  });
});
