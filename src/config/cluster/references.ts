import { isHttpsURL } from "./paths.js";
import type { ClusterSpec } from "./types.js";

// Files on the runner that a Cluster names, for the edge to check (or read) before anything
// is changed on a host: this module does not touch the file system.

export interface RunnerPathReference {
  /** The field that names it ("ssh.privateKeyFile", "nodes[2].kubeletBinary"). */
  field: string;
  path: string;
  kind: "file" | "directory";
}

/** Every path on the runner the spec refers to (URLs left out), each with its field. */
export function runnerPathReferences(spec: ClusterSpec): RunnerPathReference[] {
  const out: RunnerPathReference[] = [];
  const add = (field: string, path: string | undefined, kind: "file" | "directory" = "file") => {
    if (path !== undefined && !isHttpsURL(path)) out.push({ field, path, kind });
  };
  add("ssh.privateKeyFile", spec.ssh.privateKeyFile);
  add("cni.manifest", spec.cni.manifest);
  add("kubeletBinary", spec.kubeletBinary);
  add("kubeadm.patchesDir", spec.kubeadm.patchesDir, "directory");
  spec.nodes.forEach((n, i) => {
    // A node's merged ssh settings repeat the cluster's key file: name it once.
    if (n.ssh?.privateKeyFile !== spec.ssh.privateKeyFile) {
      add(`nodes[${i}].ssh.privateKeyFile`, n.ssh?.privateKeyFile);
    }
    add(`nodes[${i}].kubeletBinary`, n.kubeletBinary);
  });
  return out;
}
