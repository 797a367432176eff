import { readFile as readLocalFile } from "node:fs/promises";
import { posix } from "node:path";
import type { Cluster, User } from "@kubernetes/client-node";
import type { ConnectionOptions } from "node:tls";
import { routeURL, verifyServerAs, type Route } from "../remote/route.js";
import { currentEntries, parseKubeConfig } from "../kubeconfig/parse.js";
import type { KubeConfigCluster, KubeConfigUser } from "../kubeconfig/types.js";
import type { KubeClient } from "./types.js";
import type * as ClientNode from "./client-node.js";

// A KubeClient from a kubeconfig: its current context's cluster and user, with the files they
// reference read in (client-node takes data, not paths), and the route to the server. The client
// itself is client-node.ts, loaded when the first client is made: @kubernetes/client-node and
// the HTTP library under it are a large part of the bundle, which a run that makes no API call
// never loads.

export interface KubeClientOptions {
  /** Names the credentials in messages: usually the kubeconfig's path. */
  description: string;
  /**
   * Reads files the kubeconfig references (certificate-authority, client-certificate,
   * client-key, tokenFile): on a node, its Host. Default: this machine's file system.
   */
  readFile?: (path: string) => Promise<Buffer>;
  /** Where relative file references resolve (clientcmd: the kubeconfig's folder). */
  baseDir?: string;
  /** Replaces the cluster's server (kubeadm's WaitControlPlaneClient targets the local API server). */
  server?: string;
  /** Bound on each request, so a silent server cannot stall a retry loop. Default 30 s. */
  requestTimeoutMs?: number;
  /**
   * How the server is reached from this process (remote/route.ts): requests go to the routed
   * address while the serving certificate is still checked against the server's own name.
   * Default: directly.
   */
  route?: Route;
}

async function inlineFile(
  readFile: (path: string) => Promise<Buffer>,
  file: string,
  field: string,
  opts: KubeClientOptions,
): Promise<Buffer> {
  let path = file;
  if (!posix.isAbsolute(file)) {
    if (!opts.baseDir) {
      throw new Error(
        `${opts.description}: ${field} "${file}" is a relative path and the kubeconfig's folder is unknown`,
      );
    }
    path = posix.join(opts.baseDir, file);
  }
  try {
    return await readFile(path);
  } catch (e) {
    throw new Error(
      `cannot read ${path}, the ${field} of ${opts.description}: ${(e as Error).message}`,
      { cause: e },
    );
  }
}

const base64 = (data: Buffer): string => data.toString("base64");

/** Each file read once: a kubelet's kubeconfig names one PEM file as certificate and key. */
function readEachOnce(readFile: (path: string) => Promise<Buffer>) {
  const reads = new Map<string, Promise<Buffer>>();
  return (path: string): Promise<Buffer> => {
    let read = reads.get(path);
    if (!read) {
      read = readFile(path);
      reads.set(path, read);
    }
    return read;
  };
}

async function clusterEntry(
  name: string,
  cluster: KubeConfigCluster,
  readFile: (path: string) => Promise<Buffer>,
  opts: KubeClientOptions,
): Promise<Cluster> {
  const server = (opts.server ?? cluster.server ?? "").replace(/\/+$/, "");
  if (!server) throw new Error(`${opts.description}: the current cluster has no server`);
  let caData = cluster["certificate-authority-data"];
  const caFile = cluster["certificate-authority"];
  if (!caData && caFile) {
    caData = base64(await inlineFile(readFile, caFile, "certificate-authority", opts));
  }
  return {
    name: name || "cluster",
    server,
    skipTLSVerify: cluster["insecure-skip-tls-verify"] === true,
    ...(caData ? { caData } : {}),
    ...(cluster["tls-server-name"] ? { tlsServerName: cluster["tls-server-name"] } : {}),
  };
}

async function userEntry(
  name: string,
  user: (KubeConfigUser & Record<string, unknown>) | undefined,
  readFile: (path: string) => Promise<Buffer>,
  opts: KubeClientOptions,
): Promise<User> {
  // client-node applies TLS settings only when a user entry exists: anonymous access (join
  // discovery) still gets one, without credentials.
  const entry: { -readonly [K in keyof User]: User[K] } = { name: name || "anonymous" };
  if (!user) return entry;
  for (const plugin of ["exec", "auth-provider"] as const) {
    if (user[plugin] !== undefined) {
      throw new Error(`${opts.description}: the "${plugin}" credential plugin is not supported`);
    }
  }
  const certFile = user["client-certificate"];
  const keyFile = user["client-key"];
  const [certData, keyData] = await Promise.all([
    user["client-certificate-data"] ||
      (certFile && inlineFile(readFile, certFile, "client-certificate", opts).then(base64)),
    user["client-key-data"] ||
      (keyFile && inlineFile(readFile, keyFile, "client-key", opts).then(base64)),
  ]);
  if (certData) entry.certData = certData;
  if (keyData) entry.keyData = keyData;
  if (user.token) entry.token = user.token;
  else if (user.tokenFile) {
    // client-go trims the token file's content (transport/token_source.go).
    const token = (await inlineFile(readFile, user.tokenFile, "tokenFile", opts)).toString("utf8");
    entry.token = token.trim();
  }
  return entry;
}

/** A KubeClient authenticated by a kubeconfig's current context. */
export async function kubeClientFromKubeConfig(
  text: string,
  opts: KubeClientOptions,
): Promise<KubeClient> {
  const config = parseKubeConfig(text, opts.description);
  const entries = currentEntries(config, opts.description);
  const readFile = readEachOnce(opts.readFile ?? ((path: string) => readLocalFile(path)));
  const [clusterFound, user] = await Promise.all([
    clusterEntry(entries.clusterName, entries.cluster, readFile, opts),
    userEntry(
      entries.userName,
      entries.user as (KubeConfigUser & Record<string, unknown>) | undefined,
      readFile,
      opts,
    ),
  ]);
  let cluster = clusterFound;
  const server = cluster.server;
  let identity: ConnectionOptions | undefined;
  if (opts.route && /^https?:\/\//i.test(server)) {
    const routed = await routeURL(opts.route, server);
    if (routed.url !== server) {
      // A kubeconfig's tls-server-name already names what the certificate is checked against.
      identity = cluster.tlsServerName ? {} : verifyServerAs(routed.original, routed.routed);
      cluster = { ...cluster, server: routed.url };
    }
  }
  const { kubeConfigClient } = await loadClientNode();
  return kubeConfigClient(cluster, user, {
    description: opts.description,
    server,
    ...(identity ? { identity } : {}),
    ...(opts.requestTimeoutMs !== undefined ? { requestTimeoutMs: opts.requestTimeoutMs } : {}),
  });
}

type ClientNodeModule = typeof ClientNode;
let clientNode: Promise<ClientNodeModule> | undefined;

/**
 * @kubernetes/client-node's chunk, loaded once. A workflow that will talk to the API calls it
 * early (without waiting) so the chunk loads while its SSH connections are being made, instead
 * of after, at its first API request.
 */
export function loadClientNode(): Promise<ClientNodeModule> {
  clientNode ??= import("./client-node.js");
  return clientNode;
}
