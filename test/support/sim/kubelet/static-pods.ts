import { createHash } from "node:crypto";
import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { load } from "js-yaml";
import type { HostFiles } from "./host-files.js";

// SIMULATION (test double). The kubelet's file source of static pods
// (pkg/kubelet/config/file.go, common.go): every regular file in staticPodPath whose name does
// not start with "." (glob "[^.]*"), sorted, holding one Pod in YAML or JSON; files that do not
// parse are logged and skipped, folders are not recursed into.

export interface PodContainer {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  [field: string]: unknown;
}

export interface PodManifest {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    [field: string]: unknown;
  };
  spec: {
    containers: PodContainer[];
    volumes?: { name: string; hostPath?: { path: string; type?: string }; [f: string]: unknown }[];
    nodeName?: string;
    hostNetwork?: boolean;
    tolerations?: { key?: string; operator?: string; value?: string; effect?: string }[];
    [field: string]: unknown;
  };
  status?: Record<string, unknown>;
}

/** A static pod after the kubelet's applyDefaults. */
export interface StaticPod {
  /** Host path of the manifest. */
  file: string;
  /** namespace/name, the pod's full name. */
  key: string;
  name: string;
  namespace: string;
  /** The kubelet-generated UID, which is also the kubernetes.io/config.hash annotation. */
  uid: string;
  hash: string;
  pod: PodManifest;
}

export const CONFIG_HASH = "kubernetes.io/config.hash";
export const CONFIG_SOURCE = "kubernetes.io/config.source";
export const CONFIG_SEEN = "kubernetes.io/config.seen";
export const CONFIG_MIRROR = "kubernetes.io/config.mirror";

/** Minimal decoding checks (the kubelet decodes through its scheme and validates the Pod). */
function checkPod(doc: unknown, file: string): PodManifest {
  const pod = doc as PodManifest;
  if (!pod || typeof pod !== "object") throw new Error(`${file}: not an object`);
  if (pod.kind !== "Pod" || pod.apiVersion !== "v1") {
    throw new Error(
      `${file}: expected a v1 Pod, got ${String(pod.apiVersion)} ${String(pod.kind)}`,
    );
  }
  if (!pod.metadata?.name) throw new Error(`${file}: metadata.name: Required value`);
  if (!Array.isArray(pod.spec?.containers) || pod.spec.containers.length === 0) {
    throw new Error(`${file}: spec.containers: Required value`);
  }
  for (const [i, c] of pod.spec.containers.entries()) {
    if (!c?.name) throw new Error(`${file}: spec.containers[${i}].name: Required value`);
  }
  return pod;
}

/**
 * common.go applyDefaults: UID = MD5 over the pod and "host:<node>" "file:<path>" (the kubelet
 * hashes a spew dump of the Go struct, which cannot be reproduced here: the value differs from
 * a real kubelet's but changes exactly when the manifest does); name "<name>-<lower(node)>";
 * namespace "default" when empty; spec.nodeName; annotation kubernetes.io/config.hash = UID;
 * a toleration of every NoExecute taint (static pods are never evicted); status Pending.
 * config.go adds kubernetes.io/config.source "file" and kubernetes.io/config.seen.
 */
export function applyDefaults(
  raw: PodManifest,
  file: string,
  nodeName: string,
  seen: (uid: string) => string,
): StaticPod {
  const pod = structuredClone(raw);
  const md5 = createHash("md5");
  md5.update(JSON.stringify(raw));
  md5.update(`host:${nodeName}`);
  md5.update(`file:${file}`);
  const uid = pod.metadata.uid || md5.digest("hex");
  pod.metadata.uid = uid;
  pod.metadata.name = `${pod.metadata.name}-${nodeName.toLowerCase()}`;
  pod.metadata.namespace ||= "default";
  pod.spec.nodeName = nodeName;
  pod.metadata.annotations = {
    ...pod.metadata.annotations,
    [CONFIG_HASH]: uid,
    [CONFIG_SEEN]: seen(uid),
    [CONFIG_SOURCE]: "file",
  };
  const tolerations = pod.spec.tolerations ?? [];
  if (!tolerations.some((t) => t.operator === "Exists" && !t.key && t.effect === "NoExecute")) {
    pod.spec.tolerations = [...tolerations, { operator: "Exists", effect: "NoExecute" }];
  }
  pod.status = { phase: "Pending" };
  return {
    file,
    key: `${pod.metadata.namespace}/${pod.metadata.name}`,
    name: pod.metadata.name,
    namespace: pod.metadata.namespace,
    uid,
    hash: uid,
    pod,
  };
}

/** One read of the static pod folder. Errors per file are reported through `log`. */
export async function readStaticPods(
  files: HostFiles,
  staticPodPath: string,
  nodeName: string,
  seen: (uid: string) => string,
  log: (line: string) => void,
): Promise<StaticPod[]> {
  let names: string[];
  try {
    names = await readdir(files.real(staticPodPath));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw e;
  }
  const pods: StaticPod[] = [];
  const byKey = new Set<string>();
  for (const name of names.filter((n) => !n.startsWith(".")).sort()) {
    const file = join(staticPodPath, name);
    try {
      const st = await stat(files.real(file));
      if (!st.isFile()) continue; // "not recursing into manifest path"
      const text = await files.readText(file);
      if (text === undefined) continue;
      const pod = applyDefaults(checkPod(load(text), file), file, nodeName, seen);
      if (byKey.has(pod.key)) {
        log(
          `Could not process manifest file ${file}: pod ${pod.key} is already defined by another file`,
        );
        continue;
      }
      byKey.add(pod.key);
      pods.push(pod);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") continue;
      log(`Could not process manifest file ${file}: ${(e as Error).message}`);
    }
  }
  return pods;
}
