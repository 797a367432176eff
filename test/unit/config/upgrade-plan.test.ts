import { describe, expect, it } from "vitest";
import {
  computeAvailableUpgrades,
  genUpgradePlan,
  printUpgradePlan,
  tabulate,
  type Upgrade,
} from "../../../src/config/upgrade-plan.js";

// Expected outputs are kubeadm's own fixtures: TestPrintUpgradePlan and
// TestPrintUpgradePlanStructured in cmd/kubeadm/app/cmd/upgrade/plan_test.go (the
// output.kubeadm.k8s.io/v1alpha3 version, with the NODE column).

const versionStates = [
  {
    group: "kubeproxy.config.k8s.io",
    currentVersion: "v1alpha1",
    preferredVersion: "v1alpha1",
    manualUpgradeRequired: false,
  },
  {
    group: "kubelet.config.k8s.io",
    currentVersion: "v1beta1",
    preferredVersion: "v1beta1",
    manualUpgradeRequired: false,
  },
];

const CONFIG_TABLE = `
The table below shows the current state of component configs as understood by this version of kubeadm.
Configs that have a "yes" mark in the "MANUAL UPGRADE REQUIRED" column require manual config upgrade or
resetting to kubeadm defaults before a successful upgrade can be performed. The version to manually
upgrade to is denoted in the "PREFERRED VERSION" column.

API GROUP                 CURRENT VERSION   PREFERRED VERSION   MANUAL UPGRADE REQUIRED
kubeproxy.config.k8s.io   v1alpha1          v1alpha1            no
kubelet.config.k8s.io     v1beta1           v1beta1             no
_____________________________________________________________________

`;

function onNode1(v: string) {
  return {
    kubeAPIServerVersions: { [v]: ["node1"] },
    kubeControllerManagerVersions: { [v]: ["node1"] },
    kubeSchedulerVersions: { [v]: ["node1"] },
  };
}

describe("upgrade plan text output (kubeadm TestPrintUpgradePlan)", () => {
  it("Patch version available", () => {
    const upgrades: Upgrade[] = [
      {
        description: "version in the v1.18 series",
        before: {
          kubeVersion: "v1.18.1",
          ...onNode1("v1.18.1"),
          kubeletVersions: { "v1.18.1": ["node1"] },
          etcdVersions: { "3.4.3-0": ["node1"] },
          kubeadmVersion: "v1.18.1",
          dnsVersion: "1.6.7",
        },
        after: {
          kubeVersion: "v1.18.4",
          kubeadmVersion: "v1.18.4",
          dnsVersion: "1.6.7",
          etcdVersion: "3.4.3-0",
        },
      },
    ];
    expect(printUpgradePlan(genUpgradePlan(upgrades, versionStates), "text")).toBe(
      `Components that must be upgraded manually after you have upgraded the control plane with 'kubeadm upgrade apply':
COMPONENT   NODE      CURRENT   TARGET
kubelet     node1     v1.18.1   v1.18.4

Upgrade to the latest version in the v1.18 series:

COMPONENT                 NODE      CURRENT   TARGET
kube-apiserver            node1     v1.18.1   v1.18.4
kube-controller-manager   node1     v1.18.1   v1.18.4
kube-scheduler            node1     v1.18.1   v1.18.4
kube-proxy                          v1.18.1   v1.18.4
CoreDNS                             1.6.7     1.6.7
etcd                      node1     3.4.3-0   3.4.3-0

You can now apply the upgrade by executing the following command:

\tkubeadm upgrade apply v1.18.4

Note: Before you can perform this upgrade, you have to update kubeadm to v1.18.4.

_____________________________________________________________________

${CONFIG_TABLE}`,
    );
  });

  it("experimental version available", () => {
    const upgrades: Upgrade[] = [
      {
        description: "experimental version",
        before: {
          kubeVersion: "v1.18.5",
          ...onNode1("v1.18.5"),
          kubeletVersions: { "v1.18.5": ["node1"] },
          etcdVersions: { "3.4.3-0": ["node1"] },
          kubeadmVersion: "v1.18.5",
          dnsVersion: "1.6.7",
        },
        after: {
          kubeVersion: "v1.19.0-beta.1",
          kubeadmVersion: "v1.19.0-beta.1",
          dnsVersion: "1.7.0",
          etcdVersion: "3.4.7-0",
        },
      },
    ];
    expect(printUpgradePlan(genUpgradePlan(upgrades, versionStates), "text")).toBe(
      `Components that must be upgraded manually after you have upgraded the control plane with 'kubeadm upgrade apply':
COMPONENT   NODE      CURRENT   TARGET
kubelet     node1     v1.18.5   v1.19.0-beta.1

Upgrade to the latest experimental version:

COMPONENT                 NODE      CURRENT   TARGET
kube-apiserver            node1     v1.18.5   v1.19.0-beta.1
kube-controller-manager   node1     v1.18.5   v1.19.0-beta.1
kube-scheduler            node1     v1.18.5   v1.19.0-beta.1
kube-proxy                          v1.18.5   v1.19.0-beta.1
CoreDNS                             1.6.7     1.7.0
etcd                      node1     3.4.3-0   3.4.7-0

You can now apply the upgrade by executing the following command:

\tkubeadm upgrade apply v1.19.0-beta.1 --allow-experimental-upgrades

Note: Before you can perform this upgrade, you have to update kubeadm to v1.19.0-beta.1.

_____________________________________________________________________

${CONFIG_TABLE}`,
    );
  });

  it("multiple kubelet versions", () => {
    const upgrades: Upgrade[] = [
      {
        description: "version in the v1.19 series",
        before: {
          kubeVersion: "v1.19.2",
          ...onNode1("v1.19.2"),
          kubeletVersions: { "v1.19.2": ["node1"], "v1.19.3": ["node2", "node3"] },
          etcdVersions: { "3.4.7-0": ["node1"] },
          kubeadmVersion: "v1.19.2",
          dnsVersion: "1.7.0",
        },
        after: {
          kubeVersion: "v1.19.3",
          kubeadmVersion: "v1.19.3",
          dnsVersion: "1.7.0",
          etcdVersion: "3.4.7-0",
        },
      },
    ];
    expect(printUpgradePlan(genUpgradePlan(upgrades, versionStates), "text")).toBe(
      `Components that must be upgraded manually after you have upgraded the control plane with 'kubeadm upgrade apply':
COMPONENT   NODE      CURRENT   TARGET
kubelet     node1     v1.19.2   v1.19.3
kubelet     node2     v1.19.3   v1.19.3
kubelet     node3     v1.19.3   v1.19.3

Upgrade to the latest version in the v1.19 series:

COMPONENT                 NODE      CURRENT   TARGET
kube-apiserver            node1     v1.19.2   v1.19.3
kube-controller-manager   node1     v1.19.2   v1.19.3
kube-scheduler            node1     v1.19.2   v1.19.3
kube-proxy                          v1.19.2   v1.19.3
CoreDNS                             1.7.0     1.7.0
etcd                      node1     3.4.7-0   3.4.7-0

You can now apply the upgrade by executing the following command:

\tkubeadm upgrade apply v1.19.3

Note: Before you can perform this upgrade, you have to update kubeadm to v1.19.3.

_____________________________________________________________________

${CONFIG_TABLE}`,
    );
  });
});

describe("upgrade plan structured output (kubeadm TestPrintUpgradePlanStructured)", () => {
  const upgrades: Upgrade[] = [
    {
      description: "version in the v1.8 series",
      before: {
        kubeVersion: "v1.8.1",
        ...onNode1("v1.8.1"),
        kubeletVersions: { "v1.8.1": ["node1"] },
        etcdVersions: { "3.0.17": ["node1"] },
        kubeadmVersion: "v1.8.2",
        dnsVersion: "1.14.5",
      },
      after: {
        kubeVersion: "v1.8.3",
        kubeadmVersion: "v1.8.3",
        dnsVersion: "1.14.5",
        etcdVersion: "3.0.17",
      },
    },
  ];
  const plan = genUpgradePlan(upgrades, versionStates);
  const component = (name: string, current: string, next: string, node?: string) => ({
    name,
    currentVersion: current,
    newVersion: next,
    ...(node ? { nodeName: node } : {}),
  });

  it("JSON: every field in kubeadm's order, 4-space indentation", () => {
    const expected = {
      kind: "UpgradePlan",
      apiVersion: "output.kubeadm.k8s.io/v1alpha3",
      availableUpgrades: [
        {
          description: "version in the v1.8 series",
          components: [
            component("kubelet", "v1.8.1", "v1.8.3", "node1"),
            component("kube-apiserver", "v1.8.1", "v1.8.3", "node1"),
            component("kube-controller-manager", "v1.8.1", "v1.8.3", "node1"),
            component("kube-scheduler", "v1.8.1", "v1.8.3", "node1"),
            component("kube-proxy", "v1.8.1", "v1.8.3"),
            component("CoreDNS", "1.14.5", "1.14.5"),
            component("kubeadm", "v1.8.2", "v1.8.3"),
            component("etcd", "3.0.17", "3.0.17", "node1"),
          ],
        },
      ],
      configVersions: versionStates,
    };
    // The fixture's text is Go's json.MarshalIndent with four spaces: the same as this.
    expect(printUpgradePlan(plan, "json")).toBe(`${JSON.stringify(expected, null, 4)}\n`);
    expect(printUpgradePlan(plan, "json")).toContain(
      '{\n    "kind": "UpgradePlan",\n    "apiVersion": "output.kubeadm.k8s.io/v1alpha3",\n    "availableUpgrades": [\n        {\n            "description": "version in the v1.8 series",',
    );
  });

  it("YAML: sorted keys, as the fixture", () => {
    expect(printUpgradePlan(plan, "yaml")).toBe(`apiVersion: output.kubeadm.k8s.io/v1alpha3
availableUpgrades:
- components:
  - currentVersion: v1.8.1
    name: kubelet
    newVersion: v1.8.3
    nodeName: node1
  - currentVersion: v1.8.1
    name: kube-apiserver
    newVersion: v1.8.3
    nodeName: node1
  - currentVersion: v1.8.1
    name: kube-controller-manager
    newVersion: v1.8.3
    nodeName: node1
  - currentVersion: v1.8.1
    name: kube-scheduler
    newVersion: v1.8.3
    nodeName: node1
  - currentVersion: v1.8.1
    name: kube-proxy
    newVersion: v1.8.3
  - currentVersion: 1.14.5
    name: CoreDNS
    newVersion: 1.14.5
  - currentVersion: v1.8.2
    name: kubeadm
    newVersion: v1.8.3
  - currentVersion: 3.0.17
    name: etcd
    newVersion: 3.0.17
    nodeName: node1
  description: version in the v1.8 series
configVersions:
- currentVersion: v1alpha1
  group: kubeproxy.config.k8s.io
  manualUpgradeRequired: false
  preferredVersion: v1alpha1
- currentVersion: v1beta1
  group: kubelet.config.k8s.io
  manualUpgradeRequired: false
  preferredVersion: v1beta1
kind: UpgradePlan
`);
  });

  it("text", () => {
    expect(printUpgradePlan(plan, "text"))
      .toBe(`Components that must be upgraded manually after you have upgraded the control plane with 'kubeadm upgrade apply':
COMPONENT   NODE      CURRENT   TARGET
kubelet     node1     v1.8.1    v1.8.3

Upgrade to the latest version in the v1.8 series:

COMPONENT                 NODE      CURRENT   TARGET
kube-apiserver            node1     v1.8.1    v1.8.3
kube-controller-manager   node1     v1.8.1    v1.8.3
kube-scheduler            node1     v1.8.1    v1.8.3
kube-proxy                          v1.8.1    v1.8.3
CoreDNS                             1.14.5    1.14.5
etcd                      node1     3.0.17    3.0.17

You can now apply the upgrade by executing the following command:

\tkubeadm upgrade apply v1.8.3

Note: Before you can perform this upgrade, you have to update kubeadm to v1.8.3.

_____________________________________________________________________

${CONFIG_TABLE}`);
  });
});

describe("computeAvailableUpgrades (GetAvailableUpgrades)", () => {
  const before = {
    kubeAPIServerVersions: { "v1.35.5": ["cp"] },
    kubeletVersions: { "v1.35.5": ["cp"] },
    etcdVersions: { "3.6.6-0": ["cp"] },
    dnsVersion: "v1.13.1",
  };
  const versions = {
    etcdVersionFor: (v: string) => (v.startsWith("v1.36") ? "3.6.8-0" : "3.6.6-0"),
    dnsVersionFor: (v: string) => (v.startsWith("v1.36") ? "v1.14.2" : "v1.13.1"),
  };

  it("a newer stable minor with the cluster already on its branch's latest patch: only the minor upgrade (observed v1.35.5 → v1.36.1)", () => {
    const ups = computeAvailableUpgrades({
      clusterVersion: "v1.35.5",
      kubeadmVersion: "v1.36.1",
      stableVersion: "v1.36.1",
      patchVersion: "v1.35.5",
      before,
      ...versions,
    });
    expect(ups.map((u) => [u.description, u.before.kubeVersion, u.after.kubeVersion])).toEqual([
      ["stable version", "1.35.5", "v1.36.1"],
    ]);
    expect(ups[0]!.after).toMatchObject({ etcdVersion: "3.6.8-0", dnsVersion: "v1.14.2" });
  });

  it("a patch and a minor upgrade (observed v1.34.0 with kubeadm v1.35.0)", () => {
    const ups = computeAvailableUpgrades({
      clusterVersion: "v1.34.0",
      kubeadmVersion: "v1.35.0",
      stableVersion: "v1.35.5",
      patchVersion: "v1.34.8",
      before,
      ...versions,
    });
    expect(ups.map((u) => [u.description, u.after.kubeVersion, u.after.kubeadmVersion])).toEqual([
      ["version in the v1.34 series", "v1.34.8", "v1.35.0"],
      ["stable version", "v1.35.5", "v1.35.5"],
    ]);
  });

  it("a version given to plan answers every label (kubeadm's OfflineVersionGetter)", () => {
    const ups = computeAvailableUpgrades({
      clusterVersion: "v1.35.0",
      kubeadmVersion: "v1.36.3",
      stableVersion: "v1.36.3",
      patchVersion: "v1.36.3",
      before,
      ...versions,
    });
    expect(ups.map((u) => [u.description, u.after.kubeVersion])).toEqual([
      ["version in the v1.35 series", "v1.36.3"],
    ]);
  });

  it("nothing newer: no upgrades", () => {
    expect(
      computeAvailableUpgrades({
        clusterVersion: "v1.36.3",
        kubeadmVersion: "v1.36.3",
        stableVersion: "v1.36.3",
        patchVersion: "v1.36.3",
        before,
        ...versions,
      }),
    ).toEqual([]);
  });
});

describe("tabulate (Go text/tabwriter minwidth 10, padding 3)", () => {
  it("pads every cell but the last of a row", () => {
    expect(
      tabulate([
        ["COMPONENT", "NODE", "CURRENT", "TARGET"],
        ["kube-proxy", "", "1.35.5", "v1.36.1"],
      ]),
    ).toBe("COMPONENT    NODE      CURRENT   TARGET\nkube-proxy             1.35.5    v1.36.1\n");
  });
});
