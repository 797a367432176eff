import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";

// SIMULATION (test double). Faults of one simulated node, for failure-path tests:
// a test instrument, not a Kubernetes behaviour. They live in a JSON file in the runtime's
// folder (the simulation's own files, never a node path), read on every sync by the kubelet
// and by the container runtime, so a test can switch them on and off while both run in their
// own processes. What each one stands for:
//   frozenStaticPods   the kubelet no longer picks up changes of these components' manifests
//                      (a stuck file source, pkg/kubelet/config/file.go): the pod it runs and
//                      its mirror pod keep their kubernetes.io/config.hash, so kubeadm's
//                      WaitForStaticPodHashChange times out.
//   unpullableImages   the runtime cannot pull these images (ErrImagePull, then
//                      ImagePullBackOff: pkg/kubelet/images/image_manager.go); no container of
//                      the pod ever starts, so the pod stays Pending and kubeadm's
//                      WaitForPodsWithLabel (phase Running) times out.
//   runtimeConfigUnimplemented
//                      the container runtime predates the CRI RuntimeConfig method (KEP-4033;
//                      containerd 1.7): the call answers Unimplemented (crictl.ts), which
//                      kubeadm's ContainerRuntimeVersion preflight check warns about.
// A kubelet that fails to start is the installed binary's own fault (binary.ts); a Job that
// stays pending is a taint no Node's pods tolerate (apiserver/controllers/jobs.ts).

export interface NodeFaults {
  /** Component names: etcd, kube-apiserver, kube-controller-manager, kube-scheduler. */
  frozenStaticPods?: string[];
  /** Full image references. */
  unpullableImages?: string[];
  runtimeConfigUnimplemented?: boolean;
}

export const FAULTS_FILE = "faults.json";

export async function readFaults(dir: string | undefined): Promise<NodeFaults> {
  if (!dir) return {};
  try {
    return JSON.parse(await readFile(join(dir, FAULTS_FILE), "utf8")) as NodeFaults;
  } catch {
    return {};
  }
}

export async function writeFaults(dir: string, faults: NodeFaults): Promise<void> {
  await mkdir(dir, { recursive: true });
  const tmp = join(dir, `${FAULTS_FILE}.tmp`);
  await writeFile(tmp, JSON.stringify(faults));
  await rename(tmp, join(dir, FAULTS_FILE));
}
