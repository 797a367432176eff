import { describe, expect, it } from "vitest";
import {
  endpointMismatch,
  networkingMismatches,
  versionMismatch,
} from "../../../../src/cluster/up/finished-cluster.js";

describe("a finished cluster's version against the Cluster file's", () => {
  it.each([
    ["v1.35.0", "v1.35.0"],
    ["1.35.0", "v1.35.0"],
    ["stable-1.35", "v1.35.4"],
    ["latest-1.35", "v1.35.4"],
    ["release/stable-1.35", "v1.35.4"],
    ["stable", "v1.33.1"], // unpinned: the cluster as it is
    ["stable-1", "v1.34.0"],
    ["latest", "v1.37.0"],
  ])("%s fits a cluster at %s", (asked, running) => {
    expect(versionMismatch("ci", asked, running, "cp-1")).toBeUndefined();
  });

  it.each([
    ["v1.36.0", "v1.35.0"],
    ["v1.35.1", "v1.35.0"],
    ["v1.34.9", "v1.35.0"],
    ["stable-1.36", "v1.35.4"],
  ])("%s does not fit a cluster at %s", (asked, running) => {
    expect(versionMismatch("ci", asked, running, "cp-1")).toBe(
      `kubernetesVersion "${asked}": the cluster "ci" runs ${running} (recorded on cp-1) and "up" ` +
        `does not upgrade or downgrade a cluster; ask for ${running}, or run "kubeforge down" ` +
        "first to build a new cluster",
    );
  });
});

describe("a finished cluster's API endpoint against the Cluster file's", () => {
  const check = (server: string, wanted: string, why = "its controlPlaneEndpoint") =>
    endpointMismatch({ cluster: "ci", server, wanted, bindPort: 6443, node: "cp-1", why });

  it.each([
    ["https://10.0.0.5:6443", "10.0.0.5:6443"],
    ["https://10.0.0.5:6443", "10.0.0.5"], // kubeadm: no port = the bind port
    ["https://LB.example.com:6443", "lb.example.com"],
    ["https://lb.example.com", "lb.example.com:443"],
    ["https://[fd00::5]:6443", "[fd00::5]:6443"],
    ["https://[fd00::5]:6443", "fd00::5"],
  ])("%s is %s", (server, wanted) => {
    expect(check(server, wanted)).toBeUndefined();
  });

  it("names both endpoints and why the file needs the new one", () => {
    expect(
      check(
        "https://10.0.0.5:6443",
        "127.0.0.1:7443",
        "kubeforge's node-local proxy: 3 control planes and no controlPlaneEndpoint",
      ),
    ).toBe(
      'the cluster "ci" serves its API at 10.0.0.5:6443 (admin.conf on cp-1), but this Cluster ' +
        "file needs 127.0.0.1:7443 (kubeforge's node-local proxy: 3 control planes and no " +
        'controlPlaneEndpoint); "up" cannot move a finished cluster\'s API endpoint: run ' +
        '"kubeforge down" first to build a new cluster',
    );
    expect(check("https://10.0.0.5:6443", "10.0.0.5:7443")).toMatch(/needs 10\.0\.0\.5:7443/);
    expect(check("https://[fd00::5]:6443", "[fd00::6]:6443")).toMatch(
      /serves its API at \[fd00::5\]:6443 .* needs \[fd00::6\]:6443/,
    );
  });
});

describe("a finished cluster's networking against the Cluster file's", () => {
  const asked = {
    podSubnet: "10.244.0.0/16",
    serviceSubnet: "10.96.0.0/12",
    dnsDomain: "cluster.local",
  };
  const check = (running: Parameters<typeof networkingMismatches>[0]["running"]) =>
    networkingMismatches({ cluster: "ci", asked, running, node: "cp-1" });

  it("agrees when kubeadm-config says the same, spaces and case in CIDR lists aside", () => {
    expect(check({ ...asked })).toEqual([]);
    const dual = { ...asked, podSubnet: "10.244.0.0/16,FD00::/56" };
    expect(
      networkingMismatches({
        cluster: "ci",
        asked: dual,
        running: { ...dual, podSubnet: "10.244.0.0/16, fd00::/56" },
        node: "cp-1",
      }),
    ).toEqual([]);
  });

  it("names each field that differs, with both values and the way out", () => {
    expect(check({ ...asked, podSubnet: "10.245.0.0/16", dnsDomain: "corp.local" })).toEqual([
      'networking.podSubnet 10.244.0.0/16: the cluster "ci" was built with 10.245.0.0/16 (kube-system/kubeadm-config, through cp-1) and "up" does not change a finished cluster\'s networking; ask for 10.245.0.0/16, or run "kubeforge down" first to build a new cluster',
      'networking.dnsDomain cluster.local: the cluster "ci" was built with corp.local (kube-system/kubeadm-config, through cp-1) and "up" does not change a finished cluster\'s networking; ask for corp.local, or run "kubeforge down" first to build a new cluster',
    ]);
  });

  it("a pod range asked for where the cluster has none (and the reverse) is a difference", () => {
    expect(check({ serviceSubnet: asked.serviceSubnet, dnsDomain: asked.dnsDomain })).toEqual([
      expect.stringMatching(/^networking\.podSubnet 10\.244\.0\.0\/16: .* was built with none /),
    ]);
    expect(
      networkingMismatches({
        cluster: "ci",
        asked: { ...asked, podSubnet: "" },
        running: asked,
        node: "cp-1",
      }),
    ).toEqual([expect.stringMatching(/^networking\.podSubnet none: .* built with 10\.244/)]);
  });
});
