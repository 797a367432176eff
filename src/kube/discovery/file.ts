import { posix } from "node:path";
import { fileURLToPath } from "node:url";
import { formatGoDuration } from "../../config/duration.js";
import {
  clusterCAData,
  clusterOf,
  currentUser,
  hasAuthenticationCredentials,
  type ClusterEntry,
} from "../../kubeconfig/bootstrap.js";
import type { KubeConfig, KubeConfigCluster, KubeConfigUser } from "../../kubeconfig/types.js";
import { isForbidden } from "../errors.js";
import type { Route } from "../../remote/route.js";
import { poll, PollTimeoutError } from "../poll.js";
import type { KubeObject } from "../types.js";
import {
  CLUSTER_INFO_REF,
  DISCOVERY_REQUEST_TIMEOUT_MS,
  DISCOVERY_RETRY_INTERVAL_MS,
  defaultClientFactory,
  kubeconfigText,
  loadKubeConfig,
  requirePositive,
  type ClientFactory,
} from "./common.js";
import { downloadDiscoveryFile } from "./https.js";

// File and HTTPS discovery (kubeadm: discovery/file/file.go RetrieveValidatedConfigInfo and
// ValidateConfigInfo, discovery/https/https.go): the kubeconfig given is checked, the files it
// refers to are embedded (so it still works once written as bootstrap-kubelet.conf), then
// cluster-info is read with it over verified TLS, which proves the CA, and used to fill in a
// missing CA. A 403 on cluster-info is accepted (the admin did not open it to this client);
// any other failure is retried until the discovery timeout, then fails.

export interface FileDiscoveryOptions {
  /** Reads the file and the files it refers to: the joining node's Host. */
  readFile(path: string): Promise<Buffer>;
  /** Progress lines (kubeadm prints them at --v=1). */
  log: (line: string) => void;
  /** Warnings (kubeadm prints them always); default `log`. */
  warn?: (line: string) => void;
  /** JoinConfiguration.timeouts.discovery: bounds the download and the cluster-info wait. */
  timeoutMs: number;
  /** Between cluster-info attempts; kubeadm: 5 s. */
  intervalMs?: number;
  /** PEM CAs trusted for an https:// URL besides the host's store. */
  extraCACerts?: string | Buffer | readonly (string | Buffer)[];
  /** Builds the cluster-info client; default kube/client.ts. */
  clientFor?: ClientFactory;
  /** How the joining node's connections leave this process (the download too); default directly. */
  route?: Route;
}

/** Where a discovery file comes from. */
export type DiscoveryFileLocation = { kind: "file"; path: string } | { kind: "https"; url: string };

/**
 * A path, a file:// URL (taken as its path) or an https:// URL. kubeadm's validation
 * (ValidateDiscoveryFile) accepts only paths and https URLs: any other scheme is refused here.
 */
export function discoveryFileLocation(pathOrUrl: string): DiscoveryFileLocation {
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(pathOrUrl)?.[1]?.toLowerCase();
  if (scheme === undefined) return { kind: "file", path: pathOrUrl };
  if (scheme === "https") return { kind: "https", url: pathOrUrl };
  if (scheme === "file") {
    try {
      return { kind: "file", path: fileURLToPath(pathOrUrl) };
    } catch (e) {
      throw new Error(`"${pathOrUrl}" is not a valid file:// URL: ${(e as Error).message}`, {
        cause: e,
      });
    }
  }
  throw new Error(
    `"${pathOrUrl}" is not a valid discovery file: only https URLs and file paths (or file:// URLs) are accepted`,
  );
}

/** The discovery kubeconfig, validated, with its CA and credentials embedded. */
export async function discoverFromFile(
  pathOrUrl: string,
  o: FileDiscoveryOptions,
): Promise<KubeConfig> {
  const timeoutMs = requirePositive(o.timeoutMs, "the discovery timeout");
  const location = discoveryFileLocation(pathOrUrl);
  let text: Buffer;
  let source: string;
  let baseDir: string | undefined;
  if (location.kind === "https") {
    source = `the discovery file ${location.url}`;
    text = await downloadDiscoveryFile(location.url, {
      timeoutMs,
      ...(o.extraCACerts === undefined ? {} : { extraCACerts: o.extraCACerts }),
      ...(o.route ? { route: o.route } : {}),
    });
  } else {
    source = `the discovery file ${location.path}`;
    // clientcmd.LoadFromFile resolves relative references against the file's folder.
    baseDir = posix.dirname(location.path);
    try {
      text = await o.readFile(location.path);
    } catch (e) {
      throw new Error(`cannot read ${source}: ${(e as Error).message}`, { cause: e });
    }
  }
  let config = loadKubeConfig(text, source);
  if (location.kind === "https") config = downloadedForDiscovery(config, source, o.warn ?? o.log);
  return await validateConfigInfo(config, { ...o, timeoutMs }, source, baseDir);
}

// Fields of a downloaded discovery file kubeforge does not use (it keeps the picked cluster's
// server and CA). kubeadm uses the file whole (discovery/https RetrieveValidatedConfigInfo hands
// it to file.ValidateConfigInfo): EnsureAuthenticationInfoAreEmbedded
// (util/kubeconfig/kubeconfig.go) reads the client-certificate, client-key and tokenFile it
// names from the joining node's disk and sends them to the server, every 5 s while cluster-info
// is retried, and client-go runs an exec plugin it names. Whoever serves the URL would choose
// which local file leaves the machine, or which command runs; kubeforge runs in CI next to
// secrets, so a downloaded file is taken for the cluster's address and CA only.
const CLUSTER_FIELDS_KEPT = new Set(["server", "certificate-authority-data"]);

/** The picked cluster's server and embedded CA, alone; what else the file held is named in a warning. */
export function downloadedForDiscovery(
  config: KubeConfig,
  source: string,
  warn: (line: string) => void,
): KubeConfig {
  const entry = clusterOf(config);
  if (!entry) return config; // validateConfigInfo says what is wrong
  const cluster = entry.cluster;
  if (cluster["certificate-authority"] && !cluster["certificate-authority-data"]) {
    throw new Error(
      `${source} names a file on this machine as its CA (certificate-authority); a downloaded discovery file must carry its CA as certificate-authority-data`,
    );
  }
  const ignored = Object.keys(cluster)
    .filter((k) => !CLUSTER_FIELDS_KEPT.has(k))
    .map((k) => `clusters.${k}`);
  for (const { name, user } of config.users.filter(Boolean)) {
    for (const field of Object.keys(user ?? {}))
      ignored.push(`users[${JSON.stringify(name)}].${field}`);
  }
  if (ignored.length > 0) {
    warn(
      `[discovery] ${source}: ignoring ${ignored.join(", ")}: kubeforge takes only the cluster's server and CA from a downloaded discovery file (kubeadm would also use its credentials, reading the files and running the commands they name); give the TLS bootstrap token (--tls-bootstrap-token) for the join`,
    );
  }
  const kept: KubeConfigCluster = { server: cluster.server };
  if (cluster["certificate-authority-data"]) {
    kept["certificate-authority-data"] = cluster["certificate-authority-data"];
  }
  return {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "", cluster: kept }],
    contexts: [],
    users: [],
    "current-context": "",
  };
}

/**
 * clientcmd.Validate, for what a discovery file can get wrong: contexts naming missing users
 * or clusters, clusters without a server, data and file given for the same thing. Returns
 * one message per problem.
 */
export function kubeConfigProblems(config: KubeConfig): string[] {
  const problems: string[] = [];
  const clusterNames = new Set(config.clusters.map((c) => c?.name));
  const userNames = new Set(config.users.map((u) => u?.name));
  const current = config["current-context"];
  if (current && !config.contexts.some((c) => c?.name === current)) {
    problems.push(`context was not found for specified context: ${current}`);
  }
  for (const { name, context } of config.contexts.filter(Boolean)) {
    if (!context?.user) problems.push(`user was not specified for context "${name}"`);
    else if (!userNames.has(context.user)) {
      problems.push(`user "${context.user}" was not found for context "${name}"`);
    }
    if (!context?.cluster) problems.push(`cluster was not specified for context "${name}"`);
    else if (!clusterNames.has(context.cluster)) {
      problems.push(`cluster "${context.cluster}" was not found for context "${name}"`);
    }
  }
  for (const { name, cluster } of config.clusters.filter(Boolean)) {
    if (!cluster?.server) {
      problems.push(
        name ? `no server found for cluster "${name}"` : "default cluster has no server defined",
      );
    }
    if (cluster?.["certificate-authority"] && cluster["certificate-authority-data"]) {
      problems.push(
        `certificate-authority-data and certificate-authority are both specified for cluster "${name}"`,
      );
    }
  }
  for (const { name, user } of config.users.filter(Boolean)) {
    const u = (user ?? {}) as KubeConfigUser & { username?: string; password?: string };
    if (u["client-certificate"] && u["client-certificate-data"]) {
      problems.push(`client-cert-data and client-cert are both specified for user "${name}"`);
    }
    if (u["client-key"] && u["client-key-data"]) {
      problems.push(`client-key-data and client-key are both specified for user "${name}"`);
    }
    if ((u.token || u.tokenFile) && (u.username || u.password)) {
      problems.push(
        `more than one authentication method found for user "${name}"; only one is allowed`,
      );
    }
  }
  return problems;
}

interface Reader {
  readFile(path: string): Promise<Buffer>;
  source: string;
  baseDir: string | undefined;
}

async function readReferenced(r: Reader, file: string, field: string): Promise<Buffer> {
  let path = file;
  if (!posix.isAbsolute(file)) {
    if (r.baseDir === undefined) {
      throw new Error(
        `${r.source} refers to the ${field} "${file}" by a relative path, which has no folder to resolve against`,
      );
    }
    path = posix.join(r.baseDir, file);
  }
  try {
    return await r.readFile(path);
  } catch (e) {
    throw new Error(`cannot read ${path}, the ${field} of ${r.source}: ${(e as Error).message}`, {
      cause: e,
    });
  }
}

/**
 * EnsureCertificateAuthorityIsEmbedded and EnsureAuthenticationInfoAreEmbedded: a copy of the
 * config whose picked cluster and current user hold their files' content.
 */
async function embedReferencedFiles(
  config: KubeConfig,
  entry: ClusterEntry,
  r: Reader,
): Promise<KubeConfig> {
  const out: KubeConfig = structuredClone(config);
  const cluster = clusterOf(out)!.cluster;
  const caFile = entry.cluster["certificate-authority"];
  if (!entry.cluster["certificate-authority-data"] && caFile) {
    cluster["certificate-authority-data"] = (
      await readReferenced(r, caFile, "certificate-authority")
    ).toString("base64");
    delete cluster["certificate-authority"];
  }
  if (!hasAuthenticationCredentials(out)) return out;
  const user = currentUser(out)!.user;
  if (!user["client-certificate-data"] && user["client-certificate"]) {
    user["client-certificate-data"] = (
      await readReferenced(r, user["client-certificate"], "client-certificate")
    ).toString("base64");
    delete user["client-certificate"];
  }
  if (!user["client-key-data"] && user["client-key"]) {
    user["client-key-data"] = (await readReferenced(r, user["client-key"], "client-key")).toString(
      "base64",
    );
    delete user["client-key"];
  }
  if (!user.token && user.tokenFile) {
    // client-go trims a token file's content (transport/token_source.go).
    user.token = (await readReferenced(r, user.tokenFile, "tokenFile")).toString("utf8").trim();
    delete user.tokenFile;
  }
  return out;
}

/** The kubeconfig the cluster-info client is built from: the picked cluster and the current user. */
function clientKubeConfig(config: KubeConfig, entry: ClusterEntry): KubeConfig {
  const user = currentUser(config);
  return {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "discovery", cluster: entry.cluster }],
    contexts: [
      { name: "discovery", context: { cluster: "discovery", user: user ? "discovery" : "" } },
    ],
    "current-context": "discovery",
    users: user ? [{ name: "discovery", user: user.user }] : [],
  };
}

type ClusterInfoRead = { cm: KubeObject } | { forbidden: true };

/** kubeadm's ValidateConfigInfo, after loading: `source` names the file in messages. */
export async function validateConfigInfo(
  loaded: KubeConfig,
  o: FileDiscoveryOptions,
  source: string,
  baseDir?: string,
): Promise<KubeConfig> {
  const warn = o.warn ?? o.log;
  if (loaded.clusters.length < 1) {
    throw new Error(`${source} must define at least one cluster`);
  }
  const entry = clusterOf(loaded);
  if (!entry) {
    throw new Error(
      `${source} is malformed: it has neither an unnamed cluster nor a current context naming a cluster`,
    );
  }
  const problems = kubeConfigProblems(loaded);
  if (problems.length > 0) throw new Error(`${source} is invalid: ${problems.join("; ")}`);

  const reader: Reader = { readFile: (p) => o.readFile(p), source, baseDir };
  const config = await embedReferencedFiles(loaded, entry, reader);
  const cluster = clusterOf(config)!;
  if (hasAuthenticationCredentials(config)) {
    o.log(
      "[discovery] Using authentication credentials from the discovery file for validating TLS connection",
    );
  } else {
    o.log(
      "[discovery] Discovery file does not contain authentication credentials, using unauthenticated request for validating TLS connection",
    );
  }

  const timeoutMs = o.timeoutMs;
  const intervalMs = Math.min(o.intervalMs ?? DISCOVERY_RETRY_INTERVAL_MS, timeoutMs);
  const client = await (o.clientFor ?? defaultClientFactory)(
    kubeconfigText(clientKubeConfig(config, cluster)),
    {
      description: source,
      requestTimeoutMs: Math.min(DISCOVERY_REQUEST_TIMEOUT_MS, timeoutMs),
      readFile: (p) => o.readFile(p),
      ...(baseDir === undefined ? {} : { baseDir }),
      ...(o.route ? { route: o.route } : {}),
    },
  );
  const server = cluster.cluster.server;
  o.log(`[discovery] Created cluster-info discovery client, requesting info from "${server}"`);

  let read: ClusterInfoRead;
  try {
    read = await poll<ClusterInfoRead>(
      async () => {
        try {
          return { cm: await client.get(CLUSTER_INFO_REF) };
        } catch (e) {
          if (isForbidden(e)) return { forbidden: true };
          o.log(
            `[discovery] Error reading the cluster-info ConfigMap, will try again: ${(e as Error).message}`,
          );
          throw e;
        }
      },
      { intervalMs, timeoutMs, what: "the cluster-info ConfigMap" },
    );
  } catch (e) {
    if (!(e instanceof PollTimeoutError)) throw e;
    const last = e.lastError instanceof Error ? `: ${e.lastError.message}` : "";
    throw new Error(
      `could not read the cluster-info ConfigMap from ${server} with ${source} within ${formatGoDuration(timeoutMs)}${last}`,
      { cause: e },
    );
  }

  if ("forbidden" in read) {
    warn(
      "[discovery] Could not access the cluster-info ConfigMap for refreshing the cluster-info information, but the TLS cert is valid so proceeding...",
    );
    return config;
  }
  const refreshedText = (read.cm.data as Record<string, string> | undefined)?.["kubeconfig"];
  let refreshed: KubeConfig;
  try {
    if (!refreshedText) throw new Error("no kubeconfig key in ConfigMap");
    refreshed = loadKubeConfig(refreshedText, "the kubeconfig in the cluster-info ConfigMap");
  } catch (e) {
    o.log(
      `[discovery] The cluster-info ConfigMap isn't set up properly (${(e as Error).message}), but the TLS cert is valid so proceeding...`,
    );
    return config;
  }
  const refreshedCluster = clusterOf(refreshed);
  if (!refreshedCluster) {
    throw new Error(
      "the kubeconfig in the cluster-info ConfigMap is malformed: it has neither an unnamed cluster nor a current context naming a cluster",
    );
  }
  if (refreshedCluster.cluster.server !== server) {
    warn(
      `[discovery] the API Server endpoint "${server}" in use is different from the endpoint "${refreshedCluster.cluster.server}" which defined in the cluster-info ConfigMap`,
    );
  }
  const refreshedCA = clusterCAData(refreshedCluster.cluster);
  if (clusterCAData(cluster.cluster).length === 0 && refreshedCA.length > 0) {
    cluster.cluster["certificate-authority-data"] = refreshedCA.toString("base64");
    o.log("[discovery] Synced CertificateAuthorityData from the cluster-info ConfigMap");
  }
  return config;
}
