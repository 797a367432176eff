import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ApiError } from "../../../../src/kube/errors.js";
import type { ClusterAccess, KubeClient, KubeObject } from "../../../../src/kube/types.js";
import { prepareUpgrade } from "../../../../src/phases/upgrade/prepare.js";
import type { Host } from "../../../../src/remote/host.js";
import type { LocalHost } from "../../../../src/remote/local.js";
import { recordingLogger, tempRootHost } from "../../../support/init-fixtures.js";

// prepareUpgrade: what `upgrade node` reads before any phase runs (kubeadm's newNodeData,
// cmd/upgrade/node.go, v1.35): the cluster's configuration from kube-system/kubeadm-config, then
// this node's registration from its own files (FetchInitConfigurationFromCluster). The files only
// read, so they are asked while the cluster answers; a failure of the cluster's read is still
// the one reported.

const INSTANCE = "/var/lib/kubelet/instance-config.yaml";
const CLUSTER = `apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.35.0
`;

let host: LocalHost;
let root: string;
let cleanup: () => Promise<void>;

beforeEach(async () => {
  ({ host, root, cleanup } = await tempRootHost());
});
afterEach(() => cleanup());

async function put(path: string, text: string): Promise<void> {
  await mkdir(dirname(join(root, path)), { recursive: true });
  await writeFile(join(root, path), text);
}

const notFound = (name: string) =>
  new ApiError({
    operation: { verb: "get", kind: "ConfigMap", name, namespace: "kube-system" },
    code: 404,
    reason: "NotFound",
    statusMessage: `configmaps "${name}" not found`,
  });

/** An API whose kubeadm-config is what `kubeadmConfig` answers; no other ConfigMap exists. */
function api(kubeadmConfig: () => Promise<KubeObject>): ClusterAccess {
  const client = {
    description: "/etc/kubernetes/kubelet.conf",
    get: (ref: { name: string }) =>
      ref.name === "kubeadm-config" ? kubeadmConfig() : Promise.reject(notFound(ref.name)),
  } as unknown as KubeClient;
  return {
    clientFor: () => Promise.resolve(client),
    probe: () => Promise.reject(new Error("unused")),
  };
}

const stored = (): KubeObject => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name: "kubeadm-config", namespace: "kube-system" },
  data: { ClusterConfiguration: CLUSTER },
});

/** The host, and a promise per path that settles once the path was first read. */
function watchingReads(real: Host): { host: Host; wasRead: (path: string) => Promise<void> } {
  const waiters = new Map<string, () => void>();
  const reads = new Map<string, Promise<void>>();
  const entry = (path: string) => {
    if (!reads.has(path)) reads.set(path, new Promise<void>((r) => waiters.set(path, r)));
    return reads.get(path)!;
  };
  const watched = new Proxy(real, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== "function") return value;
      if (prop !== "readFile") return (value as (...a: unknown[]) => unknown).bind(target);
      return (path: string) => {
        void entry(path);
        waiters.get(path)!();
        return target.readFile(path);
      };
    },
  });
  return { host: watched, wasRead: entry };
}

function nodeRequest(on: Host, cluster: ClusterAccess) {
  return {
    command: "node" as const,
    flags: {},
    host: on,
    reporter: recordingLogger(),
    env: {},
    stdout: () => {},
    cluster,
  };
}

describe("prepareUpgrade (upgrade node)", () => {
  it("reads the node's CRI socket from its files while kubeadm-config is asked", async () => {
    await put(INSTANCE, "containerRuntimeEndpoint: unix:///run/elsewhere/containerd.sock\n");
    const { host: watched, wasRead } = watchingReads(host);
    // kubeadm-config answers only once the node's file was read: read one after the other,
    // the file would wait for an answer that waits for it.
    const answer = async () => {
      await Promise.race([
        wasRead(INSTANCE),
        new Promise((_, reject) =>
          setTimeout(() => reject(new Error(`${INSTANCE} was not read within 5 s`)), 5_000),
        ),
      ]);
      return stored();
    };
    const prepared = await prepareUpgrade(nodeRequest(watched, api(answer)));
    expect(prepared.data.isControlPlaneNode).toBe(false);
    expect(prepared.data.cfg.init.nodeRegistration.criSocket).toBe(
      "unix:///run/elsewhere/containerd.sock",
    );
    expect(prepared.data.cfg.cluster.kubernetesVersion).toBe("v1.35.0");
  });

  it("reports a missing kubeadm-config, not the node's missing kubelet.conf read beside it", async () => {
    // A control plane (its kube-apiserver manifest) without kubelet.conf, whose registration
    // would be read back from it.
    await put("/etc/kubernetes/manifests/kube-apiserver.yaml", "kind: Pod\n");
    const missing = api(() => Promise.reject(notFound("kubeadm-config")));
    await expect(prepareUpgrade(nodeRequest(host, missing))).rejects.toThrow(
      /^unable to fetch the kubeadm-config ConfigMap: the ConfigMap "kubeadm-config" in the "kube-system" namespace was not found$/,
    );
  });

  it("reports the node's missing kubelet.conf once the cluster's configuration is read", async () => {
    await put("/etc/kubernetes/manifests/kube-apiserver.yaml", "kind: Pod\n");
    await expect(
      prepareUpgrade(
        nodeRequest(
          host,
          api(() => Promise.resolve(stored())),
        ),
      ),
    ).rejects.toThrow(/^failed to get node name from kubelet config: /);
  });
});
