import { describe, expect, it } from "vitest";
import { loadClusterSpec, type LoadClusterOptions } from "../../../../src/config/cluster/load.js";
import {
  dualStackPrimary,
  familyProblem,
  orderNodeIPs,
  parseFeatureGateList,
  splitFeatureGates,
} from "../../../../src/config/cluster/shortcuts.js";
import type { ClusterOverrides, ClusterSpec } from "../../../../src/config/cluster/types.js";
import { ConfigError } from "../../../../src/config/load.js";

// The feature-gates and ip-family shortcuts, expanded into kubeadm configuration.
// Expected placements: kind's kubeadm template (kubernetes-sigs/kind
// pkg/cluster/internal/kubeadm/config.go, ConfigTemplateBetaV3) gives the cluster's gates to the
// apiServer, controllerManager and scheduler as a `feature-gates` extra argument and to the
// KubeletConfiguration and KubeProxyConfiguration as `featureGates`; kubeadm's own gates go to
// ClusterConfiguration.featureGates (kubeadm v1.35 `--feature-gates` help, generated from
// cmd/kubeadm/app/features/features.go: ControlPlaneKubeletLocalMode, NodeLocalCRISocket,
// PublicKeysECDSA, RootlessControlPlane). Ranges per family: kind's
// pkg/internal/apis/config/default.go (fd00:10:244::/56, fd00:10:96::/112).

const HEAD = "apiVersion: kubeforge.dev/v1alpha1\nkind: Cluster\n";
const V4 = "apiVersion: kubeadm.k8s.io/v1beta4";
const BASE: LoadClusterOptions = { baseDir: "/work", home: "/home/runner" };

const gatesFrom = (text: string) => {
  const parsed = parseFeatureGateList(text);
  if ("problem" in parsed) throw new Error(parsed.problem);
  return parsed.gates;
};

function load(text: string, overrides: ClusterOverrides): ClusterSpec {
  return loadClusterSpec(text, "cluster.yaml", { ...BASE, overrides });
}

function problemsOf(text: string, overrides: ClusterOverrides): string[] {
  try {
    load(text, overrides);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    return e.problems;
  }
  throw new Error("expected the Cluster to be refused");
}

const withGates = (text: string): ClusterOverrides => ({
  featureGates: gatesFrom(text),
  from: { featureGates: "input feature-gates" },
});

const family = (f: "ipv4" | "ipv6" | "dual", more: ClusterOverrides = {}): ClusterOverrides => ({
  ...more,
  ipFamily: f,
  from: { ...more.from, ipFamily: "input ip-family" },
});

describe("parseFeatureGateList", () => {
  it("takes items separated by commas, spaces and new lines", () => {
    expect(gatesFrom("A=true, B=false\nC=TRUE  D=False")).toEqual({
      A: true,
      B: false,
      C: true,
      D: false,
    });
    expect(gatesFrom("")).toEqual({});
  });

  it.each([
    ["A=yes", `A="yes": the value must be true or false`],
    ["A=1", `A="1": the value must be true or false`],
    ["A", "A has no value; write A=true or A=false"],
    ["a-b=true", `"a-b" is not a feature gate name`],
    ["=true", `"" is not a feature gate name`],
    ["A=true,A=false", "A is given twice, as true and as false"],
  ])("refuses %j", (text, problem) => {
    const parsed = parseFeatureGateList(text);
    expect("problem" in parsed && parsed.problem).toContain(problem);
  });
});

describe("splitFeatureGates", () => {
  it("gives kubeadm its own gates, removed ones included, and the components the rest", () => {
    expect(
      splitFeatureGates({
        NodeLocalCRISocket: true,
        PublicKeysECDSA: false,
        WaitForAllControlPlaneComponents: true,
        InPlacePodVerticalScaling: true,
        KubeletInUserNamespace: false,
      }),
    ).toEqual({
      kubeadm: {
        NodeLocalCRISocket: true,
        PublicKeysECDSA: false,
        WaitForAllControlPlaneComponents: true,
      },
      components: { InPlacePodVerticalScaling: true, KubeletInUserNamespace: false },
    });
  });
});

describe("feature-gates expanded into the kubeadm documents", () => {
  it("writes component gates where kind does, kubeadm's into ClusterConfiguration", () => {
    const spec = load(HEAD, withGates("InPlacePodVerticalScaling=true,NodeLocalCRISocket=false"));
    const cfg = spec.kubeadm.config!;
    expect(cfg.cluster?.featureGates).toEqual({ NodeLocalCRISocket: false });
    for (const c of ["apiServer", "controllerManager", "scheduler"] as const) {
      expect(cfg.cluster?.[c]?.extraArgs).toEqual([
        { name: "feature-gates", value: "InPlacePodVerticalScaling=true" },
      ]);
    }
    expect(cfg.kubelet).toEqual({
      apiVersion: "kubelet.config.k8s.io/v1beta1",
      kind: "KubeletConfiguration",
      featureGates: { InPlacePodVerticalScaling: true },
    });
    expect(cfg.kubeProxy).toEqual({
      apiVersion: "kubeproxy.config.k8s.io/v1alpha1",
      kind: "KubeProxyConfiguration",
      featureGates: { InPlacePodVerticalScaling: true },
    });
  });

  it("only kubeadm gates: no component argument or component document", () => {
    const cfg = load(HEAD, withGates("RootlessControlPlane=true")).kubeadm.config!;
    expect(cfg.cluster).toEqual({ featureGates: { RootlessControlPlane: true } });
    expect(cfg.kubelet).toBeUndefined();
    expect(cfg.kubeProxy).toBeUndefined();
  });

  it("merges with the user's documents, keeping their values and arguments", () => {
    const text = `${HEAD}---
${V4}
kind: ClusterConfiguration
featureGates:
  PublicKeysECDSA: false
apiServer:
  extraArgs:
  - name: audit-log-maxage
    value: "3"
  - name: feature-gates
    value: A=true
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
maxPods: 50
featureGates:
  A: true
`;
    const cfg = load(text, withGates("A=true B=false RootlessControlPlane=true")).kubeadm.config!;
    expect(cfg.cluster?.featureGates).toEqual({
      PublicKeysECDSA: false,
      RootlessControlPlane: true,
    });
    expect(cfg.cluster?.apiServer?.extraArgs).toEqual([
      { name: "audit-log-maxage", value: "3" },
      { name: "feature-gates", value: "A=true,B=false" },
    ]);
    expect(cfg.cluster?.scheduler?.extraArgs).toEqual([
      { name: "feature-gates", value: "A=true,B=false" },
    ]);
    expect(cfg.kubelet).toMatchObject({ maxPods: 50, featureGates: { A: true, B: false } });
  });

  it("a gate the documents set to the other value is reported, naming both places", () => {
    const text = `${HEAD}---
${V4}
kind: ClusterConfiguration
controllerManager:
  extraArgs:
  - name: feature-gates
    value: "A=false"
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
featureGates:
  A: false
`;
    expect(problemsOf(text, withGates("A=true"))).toEqual([
      "input feature-gates: A=true contradicts A=false in ClusterConfiguration.controllerManager.extraArgs feature-gates (cluster.yaml); set it in one place",
      "input feature-gates: A=true contradicts A=false in KubeletConfiguration.featureGates (cluster.yaml); set it in one place",
    ]);
  });

  it("kubeadm's validation of its own gates names the input (v1.35: removed gate, locked gate)", () => {
    // kubernetes/kubernetes#134781 removed WaitForAllControlPlaneComponents in v1.35;
    // #134106 locked ControlPlaneKubeletLocalMode to true there.
    const problems = problemsOf(
      `${HEAD}kubernetesVersion: v1.35.1\n`,
      withGates("WaitForAllControlPlaneComponents=true,ControlPlaneKubeletLocalMode=false"),
    );
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(
      /^input feature-gates: ClusterConfiguration\.featureGates: WaitForAllControlPlaneComponents graduated/,
    );
    expect(problems[1]).toMatch(
      /^input feature-gates: ClusterConfiguration\.featureGates: cannot set feature gate ControlPlaneKubeletLocalMode to false/,
    );
  });
});

describe("ip-family", () => {
  it.each([
    ["ipv4", "10.244.0.0/16", "10.96.0.0/12"],
    ["ipv6", "fd00:10:244::/56", "fd00:10:96::/112"],
    ["dual", "10.244.0.0/16,fd00:10:244::/56", "10.96.0.0/12,fd00:10:96::/112"],
  ] as const)("%s: the family's ranges when none is given", (f, pods, services) => {
    const spec = load(HEAD, family(f));
    expect(spec.networking.podSubnet).toBe(pods);
    expect(spec.networking.serviceSubnet).toBe(services);
  });

  it("keeps given ranges that fit the family", () => {
    const spec = load(
      `${HEAD}networking:\n  serviceSubnet: "fd00:1::/112,10.1.0.0/16"\n`,
      family("dual", {
        podSubnet: "10.2.0.0/16,fd00:2::/56",
        from: { podSubnet: "input pod-network-cidr" },
      }),
    );
    expect(spec.networking).toMatchObject({
      podSubnet: "10.2.0.0/16,fd00:2::/56",
      serviceSubnet: "fd00:1::/112,10.1.0.0/16",
    });
  });

  it("a range of the other family is an error naming both inputs", () => {
    expect(
      problemsOf(
        HEAD,
        family("ipv6", { podSubnet: "10.2.0.0/16", from: { podSubnet: "input pod-network-cidr" } }),
      ),
    ).toEqual([
      `input ip-family: "ipv6" contradicts input pod-network-cidr ("10.2.0.0/16"): ipv6 needs one IPv6 range`,
    ]);
  });

  it("names the Cluster file's field or the ClusterConfiguration's", () => {
    const text = `${HEAD}networking:\n  podSubnet: 10.2.0.0/16\n---\n${V4}\nkind: ClusterConfiguration\nnetworking:\n  serviceSubnet: 10.3.0.0/16\n`;
    expect(problemsOf(text, family("dual"))).toEqual([
      `input ip-family: "dual" contradicts cluster.yaml: networking.podSubnet ("10.2.0.0/16"): dual-stack needs one IPv4 and one IPv6 range`,
      `input ip-family: "dual" contradicts ClusterConfiguration.networking.serviceSubnet in cluster.yaml ("10.3.0.0/16"): dual-stack needs one IPv4 and one IPv6 range`,
    ]);
  });

  it("ipv6 refuses nodes that cannot advertise an IPv6 address", () => {
    const text = `${HEAD}nodes:
- {name: cp-1, role: control-plane, host: local, address: 192.168.1.10}
- {name: w-1, role: worker, host: docker}
`;
    expect(problemsOf(text, family("ipv6"))).toEqual([
      `input ip-family: "ipv6" contradicts cluster.yaml: nodes[0].address ("192.168.1.10"): an IPv6 cluster's nodes advertise IPv6 addresses`,
      `input ip-family: "ipv6" is not available for container nodes (w-1): their Docker network is IPv4; use ipv4`,
    ]);
    const v6 = load(
      `${HEAD}nodes:\n- {name: cp-1, role: control-plane, host: local, address: "fd00::10"}\n`,
      family("ipv6"),
    );
    expect(v6.nodes[0]!.address).toBe("fd00::10");
  });

  it("familyProblem: dual-stack in either order, single families one range", () => {
    expect(familyProblem("dual", "fd00::/56,10.0.0.0/16")).toBeUndefined();
    expect(familyProblem("dual", "10.0.0.0/16,10.1.0.0/16")).toBeDefined();
    expect(familyProblem("ipv4", "10.0.0.0/16,fd00::/56")).toBeDefined();
    expect(familyProblem("ipv4", "10.0.0.0/16")).toBeUndefined();
  });
});

// Dual-stack: every node's kubelet gets a node-ip pair (kubeadm docs, "Dual-stack support with
// kubeadm": kubeletExtraArgs node-ip "10.100.0.2,fd00:1:2:3::2" on init and join nodes), its
// primary family first — the first service range's, as kind orders it
// (pkg/cluster/internal/create/actions/config/config.go) and as kube-apiserver requires of the
// advertise address (validatePublicIPServiceClusterIPRangeIPFamilies).
describe("dual-stack nodes", () => {
  it("dualStackPrimary: the first service range's family, only when a range of each family is given", () => {
    expect(
      dualStackPrimary({ podSubnet: "10.244.0.0/16,fd00::/56", serviceSubnet: "10.96.0.0/12" }),
    ).toBe(4);
    expect(
      dualStackPrimary({
        podSubnet: "10.244.0.0/16,fd00::/56",
        serviceSubnet: "fd00:10:96::/112,10.96.0.0/12",
      }),
    ).toBe(6);
    expect(dualStackPrimary({ podSubnet: "", serviceSubnet: "fd00::/112,10.96.0.0/12" })).toBe(6);
    expect(dualStackPrimary({ podSubnet: "10.244.0.0/16", serviceSubnet: "10.96.0.0/12" })).toBe(
      undefined,
    );
    expect(dualStackPrimary({ podSubnet: "fd00::/56", serviceSubnet: "fd00::/112" })).toBe(
      undefined,
    );
  });

  it("orderNodeIPs: the primary family's address first", () => {
    expect(orderNodeIPs(["192.0.2.10", "2001:db8::10"], 4)).toEqual(["192.0.2.10", "2001:db8::10"]);
    expect(orderNodeIPs(["192.0.2.10", "2001:db8::10"], 6)).toEqual(["2001:db8::10", "192.0.2.10"]);
  });

  it("a node's address may be a pair of one IPv4 and one IPv6 address, written canonically", () => {
    const spec = load(
      `${HEAD}nodes:\n- {name: cp-1, role: control-plane, host: local, address: "2001:DB8:0::10, 192.0.2.10"}\n`,
      family("dual"),
    );
    expect(spec.nodes[0]!.address).toBe("2001:db8::10,192.0.2.10");
    // Dual-stack from the Cluster's own ranges, without the shortcut.
    const own = load(
      `${HEAD}networking: {podSubnet: "10.2.0.0/16,fd00:2::/56", serviceSubnet: "10.3.0.0/16,fd00:3::/112"}\nnodes:\n- {name: cp-1, role: control-plane, host: local, address: "192.0.2.10,2001:db8::10"}\n`,
      {},
    );
    expect(own.nodes[0]!.address).toBe("192.0.2.10,2001:db8::10");
  });

  it("refuses a pair outside dual-stack, a pair of one family, an address given twice", () => {
    expect(
      problemsOf(
        `${HEAD}nodes:\n- {name: cp-1, role: control-plane, host: local, address: "192.0.2.10,2001:db8::10"}\n`,
        {},
      ),
    ).toEqual([
      `cluster.yaml: nodes[0].address: "192.0.2.10,2001:db8::10": a pair of addresses is for a dual-stack cluster (ip-family dual, or a pod or service range of each family); give one address`,
    ]);
    expect(
      problemsOf(
        `${HEAD}nodes:
- {name: cp-1, role: control-plane, host: local, address: "192.0.2.10,192.0.2.11"}
- {name: w-1, role: worker, host: "ssh://root@w-1", address: "192.0.2.12,2001:db8::10,2001:db8::11"}
- {name: w-2, role: worker, host: "ssh://root@w-2", address: "192.0.2.13,2001:db8::13"}
- {name: w-3, role: worker, host: "ssh://root@w-3", address: "2001:db8::13"}
`,
        family("dual"),
      ).filter((p) => p.includes("address")),
    ).toEqual([
      `cluster.yaml: nodes[0].address: "192.0.2.10,192.0.2.11": a pair of addresses needs one IPv4 and one IPv6 address`,
      `cluster.yaml: nodes[1].address: "192.0.2.12,2001:db8::10,2001:db8::11" is not an IP address, nor a pair of one IPv4 and one IPv6 address ("192.0.2.10,2001:db8::10")`,
      `cluster.yaml: nodes[3].address: 2001:db8::13 is already an address of nodes[2]`,
    ]);
  });

  it("refuses container nodes and a node-ip of the user's in a dual-stack cluster", () => {
    const text = `${HEAD}nodes:
- {name: cp-1, role: control-plane, host: local}
- {name: w-1, role: worker, host: docker}
---
${V4}
kind: JoinConfiguration
nodeRegistration:
  kubeletExtraArgs: [{name: node-ip, value: "192.0.2.10,2001:db8::10"}]
`;
    expect(problemsOf(text, family("dual"))).toEqual([
      `input ip-family: dual-stack is not available for container nodes (w-1): their Docker network is IPv4, so they have no IPv6 address for the kubelet's node-ip; use ipv4`,
      `cluster.yaml: JoinConfiguration.nodeRegistration.kubeletExtraArgs node-ip: in a dual-stack cluster kubeforge sets each node's node-ip pair from nodes[].address (or the node's detected addresses); remove it, and write a node's pair as its address ("192.0.2.10,2001:db8::10")`,
    ]);
    // Outside dual-stack the user's node-ip is theirs: kubeforge sets none.
    expect(
      load(text.replace("- {name: w-1, role: worker, host: docker}\n", ""), {}).kubeadm.config
        ?.join,
    ).toMatchObject({
      nodeRegistration: {
        kubeletExtraArgs: [{ name: "node-ip", value: "192.0.2.10,2001:db8::10" }],
      },
    });
  });
});
