import type { ClusterSpec } from "../../config/cluster/types.js";
import { applyObjects } from "../../kube/apply.js";
import type { KubeClient } from "../../kube/types.js";
import {
  LOCAL_PATH_PROVISIONER_IMAGE,
  LOCAL_PATH_STORAGE_CLASS,
  localPathStorageObjects,
} from "../../manifests/addons/local-path.js";

// The default StorageClass `up` installs after the pod network (Cluster `storage`). Applied, not
// waited for: the provisioner's pod starts like any workload, and a claim binds once it runs
// (the class binds WaitForFirstConsumer, so nothing is provisioned before a pod needs it).

const API_TIMEOUT_MS = 60_000;

export async function installStorage(
  spec: ClusterSpec,
  admin: KubeClient,
  log: (line: string) => void,
): Promise<void> {
  if (spec.storage === "none") return;
  const objects = localPathStorageObjects();
  await applyObjects(admin, objects, {
    timeoutMs: API_TIMEOUT_MS,
    log: (line) => log(`storage: ${line}`),
  });
  log(
    `storage: StorageClass ${LOCAL_PATH_STORAGE_CLASS} (the default) by ${LOCAL_PATH_PROVISIONER_IMAGE}; ${objects.length} objects applied`,
  );
}
