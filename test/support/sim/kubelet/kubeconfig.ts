import { dirname, isAbsolute, join } from "node:path";
import { dump, load } from "js-yaml";
import type { HostFiles } from "./host-files.js";

// SIMULATION (test double). Kubeconfig reading and writing as client-go's clientcmd does it for
// the kubelet: the current context picks a cluster and a user; file references are resolved
// relative to the kubeconfig's folder (clientcmd ResolveLocalPaths); *-data fields win over
// files (clientcmd/client_config.go).

/** A REST client configuration (client-go rest.Config, the parts the kubelet uses). */
export interface ClientConfig {
  /** Where it was read from, for messages. */
  source: string;
  server: string;
  caData?: Buffer;
  /** Host path of the CA file when the kubeconfig names a file (kept for writing back). */
  caFile?: string;
  insecureSkipTLSVerify: boolean;
  tlsServerName?: string;
  certData?: Buffer;
  keyData?: Buffer;
  /** Host paths of client-certificate / client-key when the kubeconfig names files. */
  certFile?: string;
  keyFile?: string;
  token?: string;
}

interface RawKubeconfig {
  "current-context"?: string;
  clusters?: { name: string; cluster: Record<string, unknown> }[];
  contexts?: { name: string; context: Record<string, unknown> }[];
  users?: { name: string; user: Record<string, unknown> }[];
}

const b64 = (v: unknown) => (typeof v === "string" && v ? Buffer.from(v, "base64") : undefined);

/** Loads host path `path`; undefined when the file does not exist. Throws on a broken file. */
export async function loadClientConfig(
  files: HostFiles,
  path: string,
): Promise<ClientConfig | undefined> {
  const text = await files.readText(path);
  if (text === undefined) return undefined;
  let raw: RawKubeconfig;
  try {
    raw = load(text) ?? {};
  } catch (e) {
    throw new Error(`${path}: not a kubeconfig: ${(e as Error).message}`, { cause: e });
  }
  const ctxName = raw["current-context"];
  const ctx = raw.contexts?.find((c) => c.name === ctxName)?.context;
  if (!ctx) throw new Error(`${path}: invalid configuration: no context "${ctxName ?? ""}"`);
  const cluster = raw.clusters?.find((c) => c.name === ctx.cluster)?.cluster;
  if (!cluster)
    throw new Error(`${path}: invalid configuration: no cluster "${String(ctx.cluster)}"`);
  const user = raw.users?.find((u) => u.name === ctx.user)?.user ?? {};
  const resolve = (p: unknown) =>
    typeof p === "string" && p ? (isAbsolute(p) ? p : join(dirname(path), p)) : undefined;

  const cfg: ClientConfig = {
    source: path,
    server: typeof cluster.server === "string" ? cluster.server : "",
    insecureSkipTLSVerify: cluster["insecure-skip-tls-verify"] === true,
  };
  if (!cfg.server)
    throw new Error(`${path}: invalid configuration: no server for the current context`);
  if (typeof cluster["tls-server-name"] === "string")
    cfg.tlsServerName = cluster["tls-server-name"];
  const caData = b64(cluster["certificate-authority-data"]);
  const caFile = resolve(cluster["certificate-authority"]);
  if (caData) cfg.caData = caData;
  else if (caFile) {
    cfg.caFile = caFile;
    cfg.caData = await mustRead(files, caFile, path);
  }
  const certData = b64(user["client-certificate-data"]);
  const keyData = b64(user["client-key-data"]);
  const certFile = resolve(user["client-certificate"]);
  const keyFile = resolve(user["client-key"]);
  if (certData) cfg.certData = certData;
  else if (certFile) cfg.certFile = certFile;
  if (keyData) cfg.keyData = keyData;
  else if (keyFile) cfg.keyFile = keyFile;
  if (typeof user.token === "string" && user.token) cfg.token = user.token;
  else if (typeof user.tokenFile === "string" && user.tokenFile) {
    cfg.token = (await mustRead(files, resolve(user.tokenFile)!, path)).toString().trim();
  }
  return cfg;
}

async function mustRead(files: HostFiles, p: string, from: string): Promise<Buffer> {
  const data = await files.read(p);
  if (data === undefined)
    throw new Error(`${from}: unable to read ${p}: no such file or directory`);
  return data;
}

/** The client certificate and key of a config, loading referenced files (rest.Config TLS). */
export async function clientCredentials(
  files: HostFiles,
  cfg: ClientConfig,
): Promise<{ cert: Buffer; key: Buffer } | undefined> {
  const cert = cfg.certData ?? (cfg.certFile ? await files.read(cfg.certFile) : undefined);
  const key = cfg.keyData ?? (cfg.keyFile ? await files.read(cfg.keyFile) : undefined);
  return cert && key ? { cert, key } : undefined;
}

/**
 * The kubeconfig the kubelet writes after bootstrapping (pkg/kubelet/certificate/bootstrap/
 * bootstrap.go writeKubeconfigFromBootstrapping): cluster "default-cluster" with the bootstrap
 * config's server and CA (file if it named one, else the data), user "default-auth" whose
 * client-certificate and client-key are both the store's current pem, context
 * "default-context" in namespace "default". clientcmd.WriteToFile writes it 0600.
 */
export function bootstrappedKubeconfig(bootstrap: ClientConfig, pemPath: string): string {
  const cluster: Record<string, unknown> = { server: bootstrap.server };
  if (bootstrap.insecureSkipTLSVerify) cluster["insecure-skip-tls-verify"] = true;
  if (bootstrap.caFile) cluster["certificate-authority"] = bootstrap.caFile;
  else if (bootstrap.caData)
    cluster["certificate-authority-data"] = bootstrap.caData.toString("base64");
  const doc = {
    apiVersion: "v1",
    clusters: [{ cluster, name: "default-cluster" }],
    contexts: [
      {
        context: { cluster: "default-cluster", namespace: "default", user: "default-auth" },
        name: "default-context",
      },
    ],
    "current-context": "default-context",
    kind: "Config",
    preferences: {},
    users: [
      { name: "default-auth", user: { "client-certificate": pemPath, "client-key": pemPath } },
    ],
  };
  return dump(doc, { lineWidth: -1, noRefs: true, seqNoIndent: true });
}
