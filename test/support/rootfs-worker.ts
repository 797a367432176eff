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
  return {
    base,
    rootfs,
    node,
    patches,
    path: (p) => join(rootfs, p),
    remove: async () => {
      await node.stop();
      await rm(base, { recursive: true, force: true });
    },
  };
}
