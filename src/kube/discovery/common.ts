import { parseYAMLDocuments } from "../../config/yaml.js";
import { renderKubeConfig } from "../../kubeconfig/build.js";
import { parseKubeConfig } from "../../kubeconfig/parse.js";
import type { KubeConfig } from "../../kubeconfig/types.js";
import type { Route } from "../../remote/route.js";
import { kubeClientFromKubeConfig } from "../client.js";
import type { KubeClient, ObjectRef } from "../types.js";

// What token and file discovery share: the cluster-info ConfigMap they read, the clients they
// read it with and kubeadm's retry constants.

/** constants.DiscoveryRetryInterval. */
export const DISCOVERY_RETRY_INTERVAL_MS = 5_000;

/** kubeconfigutil.ToClientSet bounds every request of a discovery client to 10 s. */
export const DISCOVERY_REQUEST_TIMEOUT_MS = 10_000;

/** kube-public/cluster-info (bootstrapapi.ConfigMapClusterInfo). */
export const CLUSTER_INFO_REF: ObjectRef = {
  apiVersion: "v1",
  kind: "ConfigMap",
  namespace: "kube-public",
  name: "cluster-info",
};

/** How a kubeconfig is turned into a client: kube/client.ts, or a test double. */
export type ClientFactory = (
  kubeconfig: string,
  opts: {
    description: string;
    requestTimeoutMs: number;
    readFile?: (path: string) => Promise<Buffer>;
    baseDir?: string;
    /** How the joining node's connections leave this process (remote/route.ts). */
    route?: Route;
  },
) => Promise<KubeClient>;

export const defaultClientFactory: ClientFactory = (kubeconfig, opts) =>
  kubeClientFromKubeConfig(kubeconfig, {
    description: opts.description,
    requestTimeoutMs: opts.requestTimeoutMs,
    ...(opts.readFile ? { readFile: opts.readFile } : {}),
    ...(opts.baseDir ? { baseDir: opts.baseDir } : {}),
    ...(opts.route ? { route: opts.route } : {}),
  });

/** The text a client is built from (clientcmd.Write layout). */
export function kubeconfigText(config: KubeConfig): string {
  return renderKubeConfig(config, { preferences: false });
}

/**
 * clientcmd.Load of a kubeconfig held in memory; `source` names it in the error. A document
 * that is not a mapping (an HTML page, a bare string) or whose kind is not Config is refused.
 */
export function loadKubeConfig(text: string | Uint8Array, source: string): KubeConfig {
  const body = typeof text === "string" ? text : Buffer.from(text).toString("utf8");
  if (/^\s*</.test(body)) {
    throw new Error(`${source} is not a kubeconfig: it looks like an HTML or XML page`);
  }
  let doc: unknown;
  try {
    doc = parseYAMLDocuments(body, source)[0];
  } catch (e) {
    throw new Error(`${source} is not a kubeconfig: ${(e as Error).message}`, { cause: e });
  }
  if (doc === undefined || doc === null) {
    // clientcmd.Load of an empty document is an empty configuration.
    return parseKubeConfig("{}", source);
  }
  if (typeof doc !== "object" || Array.isArray(doc)) {
    throw new Error(`${source} is not a kubeconfig: it is not a YAML mapping`);
  }
  const kind = (doc as { kind?: unknown }).kind;
  if (kind !== undefined && kind !== "Config") {
    throw new Error(
      `${source} is not a kubeconfig: its kind is ${JSON.stringify(kind)}, not "Config"`,
    );
  }
  return parseKubeConfig(body, source);
}

/** Positive milliseconds, for options that bound a wait. */
export function requirePositive(value: number, what: string): number {
  if (!Number.isFinite(value) || value <= 0) {
    throw new Error(`${what} must be a positive duration, got ${value} ms`);
  }
  return value;
}
