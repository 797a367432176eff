import { parseYAMLDocuments } from "../config/yaml.js";
import type { KubeConfig, KubeConfigCluster, KubeConfigUser } from "./types.js";

// Reading an existing kubeconfig as clientcmd.LoadFromFile would, for reuse checks.

/** Parses a kubeconfig file; `file` names it in errors. */
export function parseKubeConfig(text: string | Uint8Array, file: string): KubeConfig {
  const source = typeof text === "string" ? text : Buffer.from(text).toString("utf8");
  let doc: unknown;
  try {
    doc = parseYAMLDocuments(source, file)[0];
  } catch (e) {
    throw new Error(`failed to load kubeconfig file ${file}: ${(e as Error).message}`, {
      cause: e,
    });
  }
  if (!doc || typeof doc !== "object" || Array.isArray(doc)) {
    throw new Error(`failed to load kubeconfig file ${file}: it is not a kubeconfig object`);
  }
  const raw = doc as Partial<KubeConfig>;
  const list = <T>(v: T[] | undefined | null): T[] => (Array.isArray(v) ? v : []);
  return {
    apiVersion: "v1",
    kind: "Config",
    clusters: list(raw.clusters),
    contexts: list(raw.contexts),
    "current-context": typeof raw["current-context"] === "string" ? raw["current-context"] : "",
    preferences: {},
    users: list(raw.users),
  };
}

export interface CurrentEntries {
  contextName: string;
  clusterName: string;
  cluster: KubeConfigCluster;
  userName: string;
  user: KubeConfigUser | undefined;
}

/** The cluster and user of the current context; throws naming `file` when they are missing. */
export function currentEntries(config: KubeConfig, file: string): CurrentEntries {
  const contextName = config["current-context"];
  const context = config.contexts.find((c) => c?.name === contextName)?.context;
  if (!context) {
    throw new Error(`failed to find CurrentContext in Contexts of the kubeconfig file ${file}`);
  }
  const cluster = config.clusters.find((c) => c?.name === context.cluster)?.cluster;
  if (!cluster) {
    throw new Error(
      `failed to find the given CurrentContext Cluster in Clusters of the kubeconfig file ${file}`,
    );
  }
  const user = config.users.find((u) => u?.name === context.user)?.user;
  return { contextName, clusterName: context.cluster, cluster, userName: context.user, user };
}

/** Decodes a base64 "*-data" field (clientcmd stores the raw bytes). */
export function decodeData(value: string | undefined): Buffer | undefined {
  return value ? Buffer.from(value, "base64") : undefined;
}
