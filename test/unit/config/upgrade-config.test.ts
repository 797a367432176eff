import { describe, expect, it } from "vitest";
import {
  applyTargetVersion,
  checkUpgradeMixedArguments,
  defaultUpgradeConfiguration,
  fromFlagOrConfig,
  loadUpgradeConfiguration,
} from "../../../src/config/upgrade-config.js";
import { decodeConfigDocuments } from "../../../src/config/load.js";

// kubeadm.k8s.io/v1beta4 UpgradeConfiguration: SetDefaults_UpgradeConfiguration
// (apis/kubeadm/v1beta4/defaults.go), ValidateMixedArguments (apis/kubeadm/validation) and
// cmdutil.ValueFromFlagsOrConfig as `kubeadm upgrade apply|node` use them.

const file = (text: string) => ({ text, source: "upgrade.yaml" });

describe("UpgradeConfiguration", () => {
  it("defaults as kubeadm: certificate renewal and etcd upgrade on, IfNotPresent, serial pulls, 3 diff lines, 5m upgradeManifests", () => {
    const d = defaultUpgradeConfiguration();
    expect(d.apply).toMatchObject({
      certificateRenewal: true,
      etcdUpgrade: true,
      forceUpgrade: false,
      dryRun: false,
      imagePullPolicy: "IfNotPresent",
      imagePullSerial: true,
      skipPhases: [],
    });
    expect(d.node).toMatchObject({ certificateRenewal: true, etcdUpgrade: true });
    expect(d.diff.contextLines).toBe(3);
    expect(d.timeouts.upgradeManifests).toBe("5m0s");
  });

  it("reads a v1beta4 UpgradeConfiguration strictly and keeps what it sets", () => {
    const { cfg } = loadUpgradeConfiguration(
      file(`apiVersion: kubeadm.k8s.io/v1beta4
kind: UpgradeConfiguration
apply:
  kubernetesVersion: v1.36.3
  certificateRenewal: false
  forceUpgrade: true
  skipPhases: [addon/kube-proxy]
  patches: {directory: /patches}
node:
  etcdUpgrade: false
diff:
  contextLines: 5
timeouts:
  upgradeManifests: 90s
`),
    );
    expect(cfg.apply).toMatchObject({
      kubernetesVersion: "v1.36.3",
      certificateRenewal: false,
      etcdUpgrade: true,
      forceUpgrade: true,
      skipPhases: ["addon/kube-proxy"],
      patchesDirectory: "/patches",
    });
    expect(cfg.node.etcdUpgrade).toBe(false);
    expect(cfg.diff.contextLines).toBe(5);
    expect(cfg.timeouts.upgradeManifests).toBe("1m30s");
  });

  it("refuses a typo, naming the file, kind and field", () => {
    expect(() =>
      loadUpgradeConfiguration(
        file(
          "apiVersion: kubeadm.k8s.io/v1beta4\nkind: UpgradeConfiguration\napply:\n  etcdUpgarde: false\n",
        ),
      ),
    ).toThrow('upgrade.yaml: UpgradeConfiguration: unknown field "apply.etcdUpgarde"');
  });

  it("a file without an UpgradeConfiguration is an error; other kinds beside one are reported", () => {
    expect(() =>
      loadUpgradeConfiguration(
        file("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n"),
      ),
    ).toThrow("no UpgradeConfiguration (kubeadm.k8s.io/v1beta4) found");
    const { warnings } = loadUpgradeConfiguration(
      file(
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: UpgradeConfiguration\n---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n",
      ),
    );
    expect(warnings.join("\n")).toContain("ignored: ClusterConfiguration");
  });

  it("init still ignores an UpgradeConfiguration in its --config file", () => {
    const docs = decodeConfigDocuments(
      "apiVersion: kubeadm.k8s.io/v1beta4\nkind: UpgradeConfiguration\n",
      "f",
    );
    expect(docs.ignoredKinds).toEqual(["UpgradeConfiguration"]);
  });

  it("--config mixes only with kubeadm's allowed flags (plus --rootfs and --dry-run-dir)", () => {
    expect(() =>
      checkUpgradeMixedArguments([
        "config",
        "yes",
        "dry-run",
        "skip-phases",
        "rootfs",
        "dry-run-dir",
        "kubeconfig",
        "ignore-preflight-errors",
      ]),
    ).not.toThrow();
    expect(() => checkUpgradeMixedArguments(["config", "force", "etcd-upgrade"])).toThrow(
      "can not mix '--config' with arguments [etcd-upgrade force]",
    );
  });

  it("a flag the user set wins over the file; the version argument over apply.kubernetesVersion", () => {
    expect(fromFlagOrConfig(undefined, true)).toBe(true);
    expect(fromFlagOrConfig(false, true)).toBe(false);
    expect(applyTargetVersion("v1.36.3", "v1.36.1")).toBe("v1.36.3");
    expect(applyTargetVersion(undefined, "v1.36.1")).toBe("v1.36.1");
    expect(() => applyTargetVersion(undefined, undefined)).toThrow(
      "missing one or more required arguments. Required arguments: [version]",
    );
  });
});
