import { toYAMLDocuments } from "../yaml.js";
import { childPath, describeValue, isMapping, type FieldReader } from "./fields.js";
import { decodeDocker, type DockerInput } from "./docker.js";
import type { ClusterSshSpec } from "./types.js";

// The Cluster document as written, read strictly: every field known, of the right type. What
// the values mean (formats, ranges across fields, defaults) is validate.ts' job.

export const CLUSTER_FIELDS = [
  "apiVersion",
  "kind",
  "name",
  "kubernetesVersion",
  "controlPlaneEndpoint",
  "networking",
  "cni",
  "storage",
  "registry",
  "kubeadm",
  "ssh",
  "nodes",
  "wait",
  "concurrency",
  "kubeletBinary",
  "skipPhases",
  "prepare",
  "docker",
] as const;
export const PREPARE_FIELDS = [
  "enabled",
  "installPackages",
  "prePullImages",
  "registryMirrors",
  "downloads",
] as const;
export const DOWNLOADS_FIELDS = ["kubernetes", "kubernetesCI", "crictl", "cniPlugins"] as const;
export const NETWORKING_FIELDS = ["podSubnet", "serviceSubnet", "dnsDomain"] as const;
export const CNI_FIELDS = ["type", "manifest"] as const;
export const KUBEADM_FIELDS = ["documents", "configFile", "patchesDir"] as const;
export const SSH_FIELDS = [
  "user",
  "port",
  "privateKeyFile",
  "privateKey",
  "passphrase",
  "password",
  "agent",
  "hostKeyFingerprints",
  "knownHosts",
  "acceptNewHostKeys",
  "jumpHost",
  "sudoPassword",
] as const;
export const NODE_FIELDS = [
  "name",
  "role",
  "host",
  "address",
  "labels",
  "taints",
  "ssh",
  "kubeletBinary",
] as const;
export const TAINT_FIELDS = ["key", "value", "effect"] as const;

/** Fields whose values are secrets: never shown in a problem. */
export const SECRET_SSH_FIELDS = ["privateKey", "passphrase", "password", "sudoPassword"] as const;

export interface TaintInput {
  key?: string;
  value?: string;
  effect?: string;
}

export interface NodeInput {
  name?: string;
  role?: string;
  host?: string;
  address?: string;
  labels?: Record<string, string>;
  taints?: TaintInput[];
  ssh?: Partial<ClusterSshSpec>;
  kubeletBinary?: string;
}

export interface ClusterInput {
  name?: string;
  kubernetesVersion?: string;
  controlPlaneEndpoint?: string;
  networking?: { podSubnet?: string; serviceSubnet?: string; dnsDomain?: string };
  /** The string form, or the object form's fields. */
  cni?: { text?: string; type?: string; manifest?: string };
  storage?: string;
  /** true, false or a port, as text. */
  registry?: string;
  kubeadm?: { documents?: string; configFile?: string; patchesDir?: string };
  ssh?: Partial<ClusterSshSpec>;
  nodes?: NodeInput[];
  wait?: string;
  concurrency?: number;
  kubeletBinary?: string;
  skipPhases?: string[];
  prepare?: PrepareInput;
  docker?: DockerInput;
}

export interface PrepareInput {
  enabled?: boolean;
  installPackages?: boolean;
  prePullImages?: boolean;
  registryMirrors?: Record<string, string[]>;
  downloads?: { kubernetes?: string; kubernetesCI?: string; crictl?: string; cniPlugins?: string };
}

function compact<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

export function decodeSsh(
  value: unknown,
  path: string,
  r: FieldReader,
): Partial<ClusterSshSpec> | undefined {
  const m = r.mapping(value, path, SSH_FIELDS);
  if (!m) return undefined;
  const p = (k: string) => childPath(path, k);
  return compact({
    user: r.string(m.user, p("user")),
    port: r.int(m.port, p("port"), 1, 65535),
    privateKeyFile: r.string(m.privateKeyFile, p("privateKeyFile"), { strict: true }),
    privateKey: r.string(m.privateKey, p("privateKey"), { secret: true, strict: true }),
    passphrase: r.string(m.passphrase, p("passphrase"), { secret: true }),
    password: r.string(m.password, p("password"), { secret: true }),
    agent: r.bool(m.agent, p("agent")),
    hostKeyFingerprints: r.stringList(m.hostKeyFingerprints, p("hostKeyFingerprints")),
    knownHosts: r.stringList(m.knownHosts, p("knownHosts")),
    acceptNewHostKeys: r.bool(m.acceptNewHostKeys, p("acceptNewHostKeys")),
    jumpHost: r.string(m.jumpHost, p("jumpHost"), { strict: true }),
    sudoPassword: sudoPassword(r.string(m.sudoPassword, p("sudoPassword"), { secret: true }), (m) =>
      r.report(p("sudoPassword"), m),
    ),
  });
}

/**
 * A sudo password is one line: `sudo -S` reads the password up to the first new line, and what
 * follows would become the start of the command's input — the content of a file being written.
 * One trailing new line (a secret saved with one, a YAML `|` block) is dropped; another is
 * refused. The value is never quoted.
 */
function sudoPassword(value: string | undefined, report: (m: string) => void): string | undefined {
  if (value === undefined) return undefined;
  const line = value.replace(/\r?\n$/, "");
  if (!/[\r\n]/.test(line)) return line;
  report(
    "holds a new line: sudo reads the password up to the first one and would pass the rest to the command as its input; give the password on one line",
  );
  return undefined;
}

function decodeTaints(value: unknown, path: string, r: FieldReader): TaintInput[] | undefined {
  const items = r.list(value, path);
  if (!items) return undefined;
  return items.map((item, i) => {
    const p = childPath(path, i);
    const m = r.mapping(item, p, TAINT_FIELDS);
    if (!m) {
      if (item === null) r.report(p, "a taint needs key and effect");
      return {};
    }
    return compact({
      key: r.string(m.key, childPath(p, "key")),
      value: r.string(m.value, childPath(p, "value")),
      effect: r.string(m.effect, childPath(p, "effect")),
    });
  });
}

function decodeNode(value: unknown, path: string, r: FieldReader): NodeInput {
  const m = r.mapping(value, path, NODE_FIELDS);
  if (!m) {
    if (value === null) r.report(path, "a node needs name, role and host");
    return {};
  }
  const p = (k: string) => childPath(path, k);
  return compact({
    name: r.string(m.name, p("name")),
    role: r.string(m.role, p("role")),
    host: r.string(m.host, p("host"), { strict: true }),
    address: r.string(m.address, p("address"), { strict: true }),
    labels: r.stringMap(m.labels, p("labels")),
    taints: decodeTaints(m.taints, p("taints"), r),
    ssh: decodeSsh(m.ssh, p("ssh"), r),
    kubeletBinary: r.string(m.kubeletBinary, p("kubeletBinary"), { strict: true }),
  });
}

function decodeCni(value: unknown, r: FieldReader): ClusterInput["cni"] {
  if (value === null || value === undefined) return undefined;
  if (typeof value === "string") return { text: value };
  const m = r.mapping(value, "cni", CNI_FIELDS);
  if (!m) return undefined;
  return compact({
    type: r.string(m.type, "cni.type"),
    manifest: r.string(m.manifest, "cni.manifest", { strict: true }),
  });
}

/** kubeadm.documents: a multi-document YAML string, or a list of documents written as YAML. */
function decodeDocuments(value: unknown, r: FieldReader): string | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === "string") return value;
  if (Array.isArray(value)) {
    const docs = value.filter((d, i) => {
      if (isMapping(d)) return true;
      r.report(`kubeadm.documents[${i}]`, "must be a kubeadm document (a mapping)");
      return false;
    });
    return docs.length > 0 ? toYAMLDocuments(docs, { sortKeys: false }) : undefined;
  }
  r.report(
    "kubeadm.documents",
    "must be YAML text (documents separated by ---) or a list of documents",
  );
  return undefined;
}

/** registryMirrors: registry → a list of URLs (a single URL written alone is a list of one). */
function decodeMirrors(
  value: unknown,
  path: string,
  r: FieldReader,
): Record<string, string[]> | undefined {
  if (value === null || value === undefined) return undefined;
  if (!isMapping(value)) {
    r.report(path, `must be a mapping of registry to mirror URLs, got ${describeValue(value)}`);
    return undefined;
  }
  const out: Record<string, string[]> = {};
  for (const [registry, urls] of Object.entries(value)) {
    const p = `${path}[${JSON.stringify(registry)}]`;
    const list = typeof urls === "string" ? [urls] : r.stringList(urls, p);
    if (list !== undefined) out[registry] = list;
    else if (urls === null) r.report(p, "must list at least one mirror URL");
  }
  return out;
}

function decodePrepare(value: unknown, r: FieldReader): PrepareInput | undefined {
  const m = r.mapping(value, "prepare", PREPARE_FIELDS);
  if (!m) return undefined;
  const downloads = (): PrepareInput["downloads"] => {
    const d = r.mapping(m.downloads, "prepare.downloads", DOWNLOADS_FIELDS);
    if (!d) return undefined;
    const url = (k: (typeof DOWNLOADS_FIELDS)[number]) =>
      r.string(d[k], `prepare.downloads.${k}`, { strict: true });
    return compact({
      kubernetes: url("kubernetes"),
      kubernetesCI: url("kubernetesCI"),
      crictl: url("crictl"),
      cniPlugins: url("cniPlugins"),
    });
  };
  return compact({
    enabled: r.bool(m.enabled, "prepare.enabled"),
    installPackages: r.bool(m.installPackages, "prepare.installPackages"),
    prePullImages: r.bool(m.prePullImages, "prepare.prePullImages"),
    registryMirrors: decodeMirrors(m.registryMirrors, "prepare.registryMirrors", r),
    downloads: downloads(),
  });
}

/** Reads the Cluster document's fields, in their documented order; problems go to the reader. */
export function decodeClusterDocument(doc: Record<string, unknown>, r: FieldReader): ClusterInput {
  r.mapping(doc, "", CLUSTER_FIELDS);
  const networking = (): ClusterInput["networking"] => {
    const m = r.mapping(doc.networking, "networking", NETWORKING_FIELDS);
    if (!m) return undefined;
    const cidr = (k: "podSubnet" | "serviceSubnet" | "dnsDomain") =>
      r.string(m[k], `networking.${k}`, { strict: true });
    return compact({
      podSubnet: cidr("podSubnet"),
      serviceSubnet: cidr("serviceSubnet"),
      dnsDomain: cidr("dnsDomain"),
    });
  };
  const kubeadm = (): ClusterInput["kubeadm"] => {
    const m = r.mapping(doc.kubeadm, "kubeadm", KUBEADM_FIELDS);
    if (!m) return undefined;
    return compact({
      documents: decodeDocuments(m.documents, r),
      configFile: r.string(m.configFile, "kubeadm.configFile", { strict: true }),
      patchesDir: r.string(m.patchesDir, "kubeadm.patchesDir", { strict: true }),
    });
  };
  return compact({
    name: r.string(doc.name, "name"),
    // A version written as a number has already lost text: YAML reads 1.30 as 1.3.
    kubernetesVersion:
      typeof doc.kubernetesVersion === "number"
        ? (r.report(
            "kubernetesVersion",
            `YAML reads ${String(doc.kubernetesVersion)} as a number, and a number loses digits (1.30 becomes 1.3); write the version in quotes, for example "1.35" or "v1.35.2"`,
          ),
          undefined)
        : r.string(doc.kubernetesVersion, "kubernetesVersion", { strict: true }),
    controlPlaneEndpoint: r.string(doc.controlPlaneEndpoint, "controlPlaneEndpoint", {
      strict: true,
    }),
    networking: networking(),
    cni: decodeCni(doc.cni, r),
    storage: r.string(doc.storage, "storage"),
    registry: r.string(doc.registry, "registry"),
    kubeadm: kubeadm(),
    ssh: decodeSsh(doc.ssh, "ssh", r),
    nodes: r.list(doc.nodes, "nodes")?.map((n, i) => decodeNode(n, `nodes[${i}]`, r)),
    wait: r.string(doc.wait, "wait"),
    concurrency: r.int(doc.concurrency, "concurrency", 1, 64),
    kubeletBinary: r.string(doc.kubeletBinary, "kubeletBinary", { strict: true }),
    skipPhases: r.stringList(doc.skipPhases, "skipPhases"),
    prepare: decodePrepare(doc.prepare, r),
    docker: decodeDocker(doc.docker, r),
  });
}
