import type { ClusterNodeSpec } from "../../config/cluster/types.js";
import type { InitConfig } from "../../config/types.js";
import { releaseFor } from "../../config/versions.js";
import { CANARY_IMAGE } from "../../manifests/probe-canary.js";
import { nodeImages } from "../up/prepare.js";
import type { UpgradeOptions } from "./data.js";

// What `stage` pulls on a node before anything changes: the images the target's kubeadm names
// for the node's role, and on the workers the canary's (where its Pods run and its replacements
// land during drains), so that a replacement does not wait on a registry in the middle of a
// drain and an image the nodes cannot pull fails the run before any change. Pure.

export function stageImages(
  cluster: InitConfig["cluster"],
  role: ClusterNodeSpec["role"],
  target: string,
  workloadProbes: UpgradeOptions["workloadProbes"],
): string[] {
  const canary = role === "worker" && workloadProbes !== undefined && !workloadProbes.user;
  return [...nodeImages({ cluster }, role, releaseFor(target)), ...(canary ? [CANARY_IMAGE] : [])];
}
