import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Release } from "../../../src/config/release.js";
import type { InitConfig } from "../../../src/config/types.js";
import { controlPlanePods } from "../../../src/manifests/control-plane.js";
import { initEtcdPod } from "../../../src/manifests/etcd.js";
import { marshalKubeletConfiguration } from "../../../src/manifests/kubelet.js";
import { controlPlanePhase } from "../../../src/phases/init/control-plane.js";
import { etcdPhase } from "../../../src/phases/init/etcd.js";
import { kubeletStartPhase } from "../../../src/phases/init/kubelet-start.js";
import { LocalHost } from "../../../src/remote/local.js";
import { caTrustDirs, HostDouble } from "../../support/host-double.js";
import { runPhase, testInitData } from "../../support/init-fixtures.js";
import { initConfig, release133, release135 } from "../../unit/manifests/fixtures.js";

// Every YAML file the etcd, control-plane and kubelet-start phases write, read back by real
// kubectl (Kubernetes' own YAML 1.1 parser, offline: `kubectl label --local -f FILE k=v -o json`)
// must be the object we meant. The configuration carries values YAML 1.1 reads differently from
// YAML 1.2 ("yes", "on", "0644", "1:2:3:4:5:6:7:8"...).

const run = promisify(execFile);

async function kubectlRead(path: string): Promise<Record<string, unknown>> {
  const { stdout } = await run("kubectl", [
    "label",
    "--local",
    "-f",
    path,
    "kubeforge-check=1",
    "-o",
    "json",
  ]);
  const obj = JSON.parse(stdout) as { metadata?: { labels?: Record<string, string> } } & Record<
    string,
    unknown
  >;
  const labels = obj.metadata?.labels;
  expect(labels?.["kubeforge-check"]).toBe("1");
  delete labels!["kubeforge-check"];
  if (labels && Object.keys(labels).length === 0) delete obj.metadata!.labels;
  if (obj.metadata && Object.keys(obj.metadata).length === 0) delete obj.metadata;
  return obj;
}

const TRICKY = [
  "yes",
  "on",
  "0644",
  "1e3",
  "~",
  "null",
  "0x1F",
  "12:30",
  "1_000",
  "y",
  ".5",
  "true",
];

function trickyConfig(advertise: string, version: string): InitConfig {
  return initConfig((c) => {
    c.cluster.kubernetesVersion = version;
    c.init.localAPIEndpoint.advertiseAddress = advertise;
    c.init.nodeRegistration.name = "0644";
    c.cluster.apiServer.extraArgs = [
      { name: "anonymous-auth", value: "yes" },
      { name: "audit-log-maxage", value: "0644" },
    ];
    c.cluster.apiServer.extraEnvs = TRICKY.map((value, i) => ({ name: `TRICKY_${i}`, value }));
    c.cluster.apiServer.extraVolumes = [
      {
        name: "on",
        hostPath: "/yes",
        mountPath: "/0644",
        readOnly: true,
        pathType: "DirectoryOrCreate",
      },
    ];
    c.cluster.scheduler.extraEnvs = [{ name: "NO", value: "off" }];
    c.cluster.etcd.local!.extraEnvs = [{ name: "ETCD_ON", value: "on" }];
    c.cluster.etcd.local!.extraArgs = [
      {
        name: "listen-metrics-urls",
        value: `http://${advertise.includes(":") ? `[${advertise}]` : advertise}:2381`,
      },
    ];
    c.kubelet = { ...c.kubelet, providerID: "0644", kubeletCgroups: "yes", systemCgroups: "on" };
  });
}

const CA_DIRS = new Set(["/usr/share/ca-certificates"]);

const variants: { name: string; advertise: string; version: string; release: () => Release }[] = [
  { name: "v1.35, IPv4", advertise: "10.0.0.4", version: "v1.35.0", release: release135 },
  {
    name: "v1.33, IPv6 that looks like a YAML 1.1 sexagesimal",
    advertise: "1:2:3:4:5:6:7:8",
    version: "v1.33.0",
    release: release133,
  },
];

describe.each(variants)(
  "kubectl reads what the phases wrote ($name)",
  ({ advertise, version, release }) => {
    let root: string;
    let cfg: InitConfig;
    const proxyEnv = { HTTPS_PROXY: "http://proxy:3128", no_proxy: "on" };

    beforeAll(async () => {
      root = await mkdtemp(join(tmpdir(), "kf-readback-"));
      cfg = trickyConfig(advertise, version);
      const host = new HostDouble(new LocalHost({ rootfs: root }), {
        facts: { hostname: "vm" },
        commands: [
          caTrustDirs(CA_DIRS),
          { match: ["systemctl"], result: { code: 127 } },
          { match: ["openrc"], result: { code: 127 } },
        ],
      });
      const data = testInitData(host, cfg, release(), { proxyEnv });
      for (const phase of [etcdPhase, controlPlanePhase, kubeletStartPhase])
        await runPhase(phase, data);
    });

    afterAll(async () => {
      await rm(root, { recursive: true, force: true });
    });

    it("reads the four static Pods as built", async () => {
      const expected: Record<string, object> = {
        ...controlPlanePods(cfg, release(), {
          existingHostPaths: CA_DIRS,
          proxyEnv,
          externalCA: false,
        }),
        etcd: initEtcdPod(cfg, release()),
      };
      for (const [name, pod] of Object.entries(expected)) {
        const read = await kubectlRead(join(root, `etc/kubernetes/manifests/${name}.yaml`));
        expect(read, name).toEqual(JSON.parse(JSON.stringify(pod)));
      }
    });

    it("reads config.yaml as the kubelet configuration we wrote", async () => {
      const read = await kubectlRead(join(root, "var/lib/kubelet/config.yaml"));
      const expected = marshalKubeletConfiguration(cfg.kubelet, release());
      if (release().featureGates.NodeLocalCRISocket) {
        expected.containerRuntimeEndpoint = cfg.init.nodeRegistration.criSocket;
      }
      expect(read).toEqual(expected);
      expect(read.providerID).toBe("0644");
    });

    it("reads instance-config.yaml (where the release writes it) as only the CRI endpoint", async () => {
      const path = join(root, "var/lib/kubelet/instance-config.yaml");
      if (!release().featureGates.NodeLocalCRISocket) {
        await expect(readFile(path)).rejects.toThrow();
        return;
      }
      // The file has no apiVersion/kind (kubeadm's format); kubectl needs them to read a document,
      // so it reads a copy with a KubeletConfiguration header in front.
      const copy = join(root, "instance-config-readable.yaml");
      await writeFile(
        copy,
        `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n${await readFile(path, "utf8")}`,
      );
      expect(await kubectlRead(copy)).toEqual({
        apiVersion: "kubelet.config.k8s.io/v1beta1",
        kind: "KubeletConfiguration",
        containerRuntimeEndpoint: cfg.init.nodeRegistration.criSocket,
      });
    });
  },
);
