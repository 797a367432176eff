import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./ports.js";
import { simulatedNode, type SimulatedNode } from "./sim/kubelet/index.js";

// A worker for `kubeforge join --rootfs` tests on this machine: its own root folder, a simulated
// kubelet (sim/kubelet) reading it, and a patches folder. The kubelet configuration comes from
// the cluster; on this shared machine the worker's kubelet needs its own healthz port, given as
// kubeadm's users do: a kubeletconfiguration patch.

export interface RootfsWorker {
  /** The folder holding rootfs/ and patches/. */
  base: string;
  rootfs: string;
  node: SimulatedNode;
  patches: string;
  path(p: string): string;
  /** Stops the kubelet and removes every file. */
  remove(): Promise<void>;
  /**
   * Writes a JoinConfiguration for this worker beside its rootfs (token discovery pinned to
   * the CA, its patches folder) and returns its path, for `kubeforge join --config`.
   */
  writeJoinConfiguration(o: JoinConfigurationOptions): Promise<string>;
}

export interface JoinConfigurationOptions {
  /** Default kubeadm.k8s.io/v1beta4. */
  apiVersion?: string;
  /** host:port of the API server. */
  endpoint: string;
  token: string;
  /** The CA pin's hex digest. */
  caHash: string;
  /** Comma-separated check names, or "all". */
  ignorePreflightErrors: string;
  /** More top-level lines (YAML). */
  extra?: string[];
}

export async function rootfsWorker(name: string): Promise<RootfsWorker> {
  const base = await mkdtemp(join(tmpdir(), "kubeforge-worker-"));
  const rootfs = join(base, "rootfs");
  const patches = join(base, "patches");
  await mkdir(rootfs);
  await mkdir(patches);
  await writeFile(
    join(patches, "kubeletconfiguration+merge.yaml"),
    `healthzPort: ${await freePort()}\n`,
  );
  const node = await simulatedNode({ rootfs, nodeName: name });
  const writeJoinConfiguration = async (o: JoinConfigurationOptions) => {
    const path = join(base, "join.yaml");
    await writeFile(
      path,
      [
        `apiVersion: ${o.apiVersion ?? "kubeadm.k8s.io/v1beta4"}`,
        "kind: JoinConfiguration",
        "discovery:",
        "  bootstrapToken:",
        `    apiServerEndpoint: "${o.endpoint}"`,
        `    token: ${o.token}`,
        `    caCertHashes: ["sha256:${o.caHash}"]`,
        `nodeRegistration: {name: ${name}, ignorePreflightErrors: [${o.ignorePreflightErrors}]}`,
        `patches: {directory: ${patches}}`,
        ...(o.extra ?? []),
        "",
      ].join("\n"),
    );
    return path;
  };
  return {
    base,
    rootfs,
    node,
    patches,
    path: (p) => join(rootfs, p),
    writeJoinConfiguration,
    remove: async () => {
      await node.stop();
      await rm(base, { recursive: true, force: true });
    },
  };
}
