import { isGoDuration, tryParseGoDurationNanos } from "../duration.js";
import { isDNS1123Subdomain, isQualifiedName } from "../names.js";
import { formatIP, ipFamily, joinHostPort, parseHostPort, parseIP } from "../network.js";
import type { Taint } from "../types.js";
import { DOWNLOADS_FIELDS, type ClusterInput, type NodeInput, type TaintInput } from "./decode.js";
import {
  DEFAULT_CLUSTER_NAME,
  DEFAULT_CONCURRENCY,
  DEFAULT_DNS_DOMAIN,
  DEFAULT_ENDPOINT_PORT,
  DEFAULT_REGISTRY_PORT,
  DEFAULT_STORAGE,
  DEFAULT_WAIT,
  defaultNodeName,
  defaultPrepare,
} from "./defaults.js";
import { buildDocker, checkDockerNode } from "./docker.js";
import { suggestField, type FieldReader } from "./fields.js";
import { parseHostURL, redactHostURL, isSshUser } from "./host-url.js";
import {
  type CollectedKubeadm,
  type NetworkingField,
  type NetworkingOrigin,
  reportKubeadmValidation,
} from "./kubeadm.js";
import { isHttpsURL, isOtherURL, resolveRunnerPath, type PathContext } from "./paths.js";
import {
  DEFAULT_SSH_PORT,
  fingerprintProblem,
  knownHostsEntries,
  knownHostsLineProblem,
  mergeSsh,
  privateKeyProblem,
} from "./ssh.js";
import {
  CLUSTER_API_VERSION,
  CLUSTER_KIND,
  type ClusterNodeSpec,
  type ClusterPrepareSpec,
  type ClusterSpec,
  type ClusterSshSpec,
  type ClusterRegistrySpec,
  type CniType,
  type NodeRole,
  STORAGE_TYPES,
  type StorageType,
} from "./types.js";
import { DEFAULT_KUBERNETES_VERSION, RELEASES } from "../versions.js";
import { removedAPIVersionProblems } from "../validate.js";
import { clusterVersionProblem, normalizeClusterVersion } from "./version.js";
import {
  type ClusterIPFamily,
  dualStackPrimary,
  FAMILY_SUBNETS,
  familyProblem,
} from "./shortcuts.js";
import { quoteValue } from "../values.js";

// The ClusterSpec built from the written Cluster: what its values mean (formats, references between
// fields, conflicts with the kubeadm documents it carries), checked as it is built, and the defaults.
// Every problem is reported (to the reader) as one sentence naming the field; secrets are never quoted.

export interface BuildContext extends PathContext {
  /** Names the Cluster file in problems about kubeadm documents. */
  source: string;
  kubeadm: CollectedKubeadm;
  /** kubeadm.configFile, already resolved and read by the caller. */
  configFile?: string;
  warn: (message: string) => void;
  /** The ranges' family (an override): its ranges are the defaults, and given ones must fit. */
  ipFamily?: { family: ClusterIPFamily; origin: string };
}

const q = quoteValue;
const ROLES: readonly NodeRole[] = ["control-plane", "worker"];
const TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
// apimachinery validation.IsValidLabelValue.
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
// apimachinery validation.IsDNS1123Label.
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const PHASE_PATH = /^[a-z0-9-]+(\/[a-z0-9-]+)*$/;

function isLabelValue(value: string): boolean {
  return value.length <= 63 && LABEL_VALUE.test(value);
}

/** A path on the runner or an https URL (cni manifests, kubelet binaries). */
function fileOrURL(
  value: string,
  path: string,
  r: FieldReader,
  ctx: PathContext,
): string | undefined {
  if (isHttpsURL(value)) return value;
  if (isOtherURL(value)) {
    r.report(path, `${q(value)}: only https:// URLs are accepted (or a path on the runner)`);
    return undefined;
  }
  const resolved = resolveRunnerPath(value, ctx);
  if (typeof resolved !== "string") {
    r.report(path, `${q(value)}: ${resolved.problem}`);
    return undefined;
  }
  return resolved;
}

// ---- ssh ------------------------------------------------------------------------------------

/** Checks one written `ssh` block; returns it with paths resolved and known_hosts one per line. */
function checkSsh(
  ssh: Partial<ClusterSshSpec> | undefined,
  path: string,
  r: FieldReader,
  ctx: PathContext,
): Partial<ClusterSshSpec> {
  const out: Partial<ClusterSshSpec> = { ...ssh };
  if (!ssh) return out;
  const p = (k: string) => `${path}.${k}`;
  if (ssh.user !== undefined && !isSshUser(ssh.user)) {
    r.report(
      p("user"),
      `${q(ssh.user)} is not a valid login name (letters, digits, '_', '.', '-')`,
    );
  }
  if (ssh.privateKey !== undefined && ssh.privateKeyFile !== undefined) {
    r.report(path, "set privateKey (the key itself) or privateKeyFile (a path), not both");
  }
  if (ssh.privateKeyFile !== undefined) {
    if (/PRIVATE KEY|\n/.test(ssh.privateKeyFile)) {
      // Never echo it: this is a key pasted into the wrong field.
      r.report(p("privateKeyFile"), "holds a key, not a path; put the key itself in privateKey");
      delete out.privateKeyFile;
    } else {
      const resolved = resolveRunnerPath(ssh.privateKeyFile, ctx);
      if (typeof resolved === "string") out.privateKeyFile = resolved;
      else r.report(p("privateKeyFile"), `${q(ssh.privateKeyFile)}: ${resolved.problem}`);
    }
  }
  if (ssh.privateKey !== undefined) {
    const problem = privateKeyProblem(ssh.privateKey);
    if (problem) r.report(p("privateKey"), problem);
  }
  ssh.hostKeyFingerprints?.forEach((f, i) => {
    const problem = fingerprintProblem(f);
    if (problem) r.report(`${p("hostKeyFingerprints")}[${i}]`, problem);
  });
  if (ssh.knownHosts !== undefined) {
    const entries = knownHostsEntries(ssh.knownHosts);
    for (const { item, line } of entries) {
      const problem = knownHostsLineProblem(line);
      if (problem) r.report(`${p("knownHosts")}[${item}]`, `${q(line)}: ${problem}`);
    }
    out.knownHosts = entries.map((e) => e.line.replace(/\s+/g, " "));
  }
  const pins = (ssh.hostKeyFingerprints?.length ?? 0) + (ssh.knownHosts?.length ?? 0);
  if (ssh.acceptNewHostKeys === true && pins > 0) {
    r.report(
      p("acceptNewHostKeys"),
      "true accepts any host key, which makes the hostKeyFingerprints and knownHosts beside it meaningless; choose one",
    );
  }
  if (ssh.jumpHost !== undefined) {
    const url = parseHostURL(ssh.jumpHost);
    if ("problem" in url || url.type !== "ssh") {
      const why = "problem" in url ? url.problem : "it must be an ssh:// URL";
      r.report(p("jumpHost"), `${q(redactHostURL(ssh.jumpHost))} is not valid: ${why}`);
    }
  }
  return out;
}

const hasKey = (s: Partial<ClusterSshSpec>) =>
  s.privateKey !== undefined || s.privateKeyFile !== undefined;

// ---- nodes ----------------------------------------------------------------------------------

function checkTaints(taints: TaintInput[], path: string, r: FieldReader): Taint[] {
  return taints.map((t, i) => {
    const p = `${path}[${i}]`;
    if (r.required(t.key, `${p}.key`, "the taint key")) {
      const errs = isQualifiedName(t.key!);
      if (errs.length > 0) r.report(`${p}.key`, `${q(t.key)} is not a valid taint key: ${errs[0]}`);
    }
    if (t.value !== undefined && !isLabelValue(t.value)) {
      r.report(
        `${p}.value`,
        `${q(t.value)} is not a valid taint value (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)`,
      );
    }
    if (r.required(t.effect, `${p}.effect`, `one of ${TAINT_EFFECTS.join(", ")}`)) {
      if (!TAINT_EFFECTS.includes(t.effect!)) {
        r.report(`${p}.effect`, `${q(t.effect)} is not one of ${TAINT_EFFECTS.join(", ")}`);
      }
    }
    return {
      key: t.key ?? "",
      ...(t.value !== undefined && t.value !== "" ? { value: t.value } : {}),
      effect: (t.effect ?? "NoSchedule") as Taint["effect"],
    };
  });
}

function checkLabels(labels: Record<string, string>, path: string, r: FieldReader): void {
  for (const [key, value] of Object.entries(labels)) {
    const errs = isQualifiedName(key);
    if (errs.length > 0) r.report(path, `${q(key)} is not a valid label key: ${errs[0]}`);
    if (!isLabelValue(value)) {
      r.report(
        `${path}.${key}`,
        `${q(value)} is not a valid label value (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)`,
      );
    }
  }
}

/** Node names, SSH targets ("host:port" or "local") and addresses seen so far → node index. */
interface Seen {
  names: Map<string, number>;
  targets: Map<string, number>;
  addresses: Map<string, number>;
}

interface NodeProblems {
  noUser: string[];
  noCredentials: string[];
  noHostKeyPolicy: string[];
}

/**
 * A node's `address`: one IP, or for a dual-stack cluster one IPv4 and one IPv6 address
 * separated by a comma, as the kubelet's --node-ip takes them. Canonical text.
 */
function parseNodeAddress(text: string): { addresses: string[] } | { problem: string } {
  const parts = text.split(",").map((s) => s.trim());
  if (parts.length > 2 || parts.some((p) => !parseIP(p))) {
    return {
      problem: `${q(text)} is not an IP address, nor a pair of one IPv4 and one IPv6 address ("192.0.2.10,2001:db8::10")`,
    };
  }
  if (parts.length === 2 && ipFamily(parts[0]!) === ipFamily(parts[1]!)) {
    return { problem: `${q(text)}: a pair of addresses needs one IPv4 and one IPv6 address` };
  }
  return { addresses: parts.map(formatIP) };
}

function buildNode(
  node: NodeInput,
  i: number,
  clusterSsh: ClusterSshSpec,
  seen: Seen,
  missing: NodeProblems,
  r: FieldReader,
  ctx: PathContext,
): ClusterNodeSpec {
  const path = `nodes[${i}]`;
  const name = node.name ?? "";
  if (r.required(node.name, `${path}.name`, "the Kubernetes node name")) {
    if (!isDNS1123Subdomain(name)) {
      r.report(
        `${path}.name`,
        `${q(name)} is not a valid node name (lower-case letters, digits, '-' and '.', starting and ending with a letter or digit)`,
      );
    }
    const previous = seen.names.get(name);
    if (previous !== undefined) {
      r.report(`${path}.name`, `${q(name)} is already the name of nodes[${previous}]`);
    } else seen.names.set(name, i);
  }
  const label = node.name ? `${path} (${node.name})` : path;

  if (r.required(node.role, `${path}.role`, `the node's role, ${ROLES.join(" or ")}`)) {
    if (!ROLES.includes(node.role as NodeRole)) {
      const guess = suggestField(node.role!, ROLES);
      r.report(
        `${path}.role`,
        `${q(node.role)} is not a role; use control-plane or worker${guess ? ` (did you mean "${guess}"?)` : ""}`,
      );
    }
  }

  const out: ClusterNodeSpec = {
    name,
    role: (node.role ?? "worker") as NodeRole,
    host: node.host ?? "",
  };

  if (node.address !== undefined) {
    const parsed = parseNodeAddress(node.address);
    if ("problem" in parsed) r.report(`${path}.address`, parsed.problem);
    else {
      out.address = parsed.addresses.join(",");
      for (const address of parsed.addresses) {
        const previous = seen.addresses.get(address);
        if (previous !== undefined) {
          r.report(`${path}.address`, `${address} is already an address of nodes[${previous}]`);
        } else seen.addresses.set(address, i);
      }
    }
  }
  if (node.labels !== undefined) {
    checkLabels(node.labels, `${path}.labels`, r);
    out.labels = node.labels;
  }
  if (node.taints !== undefined) out.taints = checkTaints(node.taints, `${path}.taints`, r);
  if (node.kubeletBinary !== undefined) {
    const binary = fileOrURL(node.kubeletBinary, `${path}.kubeletBinary`, r, ctx);
    if (binary !== undefined) out.kubeletBinary = binary;
  }

  if (!r.required(node.host, `${path}.host`, '"local", "docker" or ssh://[user@]host[:port]')) {
    return out;
  }
  const url = parseHostURL(node.host!);
  if ("problem" in url) {
    r.report(`${path}.host`, `${q(redactHostURL(node.host!))} is not valid: ${url.problem}`);
    return out;
  }
  if (url.type === "local") {
    if (node.ssh !== undefined) {
      r.report(`${path}.ssh`, "the node is local; ssh settings apply only to ssh:// hosts");
    }
    const previous = seen.targets.get("local");
    if (previous !== undefined) {
      r.report(`${path}.host`, `only one node can be local, and nodes[${previous}] already is`);
    } else seen.targets.set("local", i);
    return out;
  }
  if (url.type === "docker") {
    checkDockerNode(node, path, r);
    return out;
  }

  const own = checkSsh(node.ssh, `${path}.ssh`, r, ctx);
  if (url.user !== undefined && own.user !== undefined && own.user !== url.user) {
    r.report(
      `${path}.ssh.user`,
      `${q(own.user)} differs from the user ${q(url.user)} in nodes[${i}].host; set it in one place`,
    );
  }
  if (url.port !== undefined && own.port !== undefined && own.port !== url.port) {
    r.report(
      `${path}.ssh.port`,
      `${own.port} differs from the port ${url.port} in nodes[${i}].host; set it in one place`,
    );
  }
  const merged = mergeSsh(clusterSsh, own);
  if (merged.passphrase !== undefined && !hasKey(merged) && own.passphrase !== undefined) {
    r.report(`${path}.ssh.passphrase`, "is set, but the node has no privateKey or privateKeyFile");
  }
  const user = url.user ?? merged.user;
  const port = url.port ?? merged.port ?? DEFAULT_SSH_PORT;
  if (user === undefined) missing.noUser.push(label);
  if (!hasKey(merged) && merged.password === undefined && merged.agent !== true) {
    missing.noCredentials.push(label);
  }
  if (
    (merged.hostKeyFingerprints?.length ?? 0) === 0 &&
    (merged.knownHosts?.length ?? 0) === 0 &&
    merged.acceptNewHostKeys !== true
  ) {
    missing.noHostKeyPolicy.push(label);
  }
  const target = joinHostPort(url.host, port);
  const previous = seen.targets.get(target);
  if (previous !== undefined) {
    r.report(`${path}.host`, `${target} is already the SSH target of nodes[${previous}]`);
  } else seen.targets.set(target, i);
  out.ssh = { ...merged, ...(user !== undefined ? { user } : {}), port };
  return out;
}

function reportMissingSsh(missing: NodeProblems, r: FieldReader): void {
  const list = (labels: string[]) => labels.join(", ");
  if (missing.noUser.length > 0) {
    r.report(
      "ssh.user",
      `no SSH user for ${list(missing.noUser)}; write it in the host URL (ssh://user@host) or set ssh.user`,
    );
  }
  if (missing.noCredentials.length > 0) {
    r.report(
      "ssh",
      `no SSH credentials for ${list(missing.noCredentials)}; set ssh.privateKeyFile, ssh.privateKey, ssh.password or ssh.agent: true`,
    );
  }
  if (missing.noHostKeyPolicy.length > 0) {
    r.report(
      "ssh",
      `no host-key policy for ${list(missing.noHostKeyPolicy)}; set ssh.hostKeyFingerprints (pins such as "SHA256:..."), ssh.knownHosts or ssh.acceptNewHostKeys: true`,
    );
  }
}

function buildNodes(
  input: ClusterInput,
  name: string,
  clusterSsh: ClusterSshSpec,
  r: FieldReader,
  ctx: BuildContext,
): ClusterNodeSpec[] {
  if (input.nodes === undefined) {
    return [{ name: defaultNodeName(name), role: "control-plane", host: "local" }];
  }
  if (input.nodes.length === 0) {
    r.report("nodes", "list at least one node (or leave nodes out for one node on this machine)");
    return [];
  }
  const seen: Seen = { names: new Map(), targets: new Map(), addresses: new Map() };
  const missing: NodeProblems = { noUser: [], noCredentials: [], noHostKeyPolicy: [] };
  const nodes = input.nodes.map((n, i) => buildNode(n, i, clusterSsh, seen, missing, r, ctx));
  reportMissingSsh(missing, r);
  const controlPlanes = input.nodes.filter((n) => n.role === "control-plane").length;
  if (controlPlanes === 0 && input.nodes.every((n) => ROLES.includes(n.role as NodeRole))) {
    r.report("nodes", "at least one node must have role control-plane");
  }
  if (controlPlanes > 0 && controlPlanes % 2 === 0) {
    // etcd: a cluster of n members tolerates (n-1)/2 failures, so 2 tolerate none (etcd FAQ).
    ctx.warn(
      `${ctx.source}: ${controlPlanes} control-plane nodes: etcd keeps quorum through no more failures than with ${controlPlanes - 1}; an odd number is recommended`,
    );
  }
  return nodes;
}

// ---- networking, version, endpoint against the kubeadm documents ---------------------------

function sameCIDRs(a: string, b: string): boolean {
  return a.replace(/\s+/g, "") === b.replace(/\s+/g, "");
}

function normalizeEndpoint(text: string, bindPort: number): string | undefined {
  const hp = parseHostPort(text);
  if ("problem" in hp) return undefined;
  return joinHostPort(hp.host, hp.port ?? bindPort);
}

function buildStorage(value: string | undefined, r: FieldReader): StorageType {
  if (value === undefined) return DEFAULT_STORAGE;
  if ((STORAGE_TYPES as readonly string[]).includes(value)) return value as StorageType;
  r.report("storage", `${q(value)} is not ${STORAGE_TYPES.join(" or ")}`);
  return DEFAULT_STORAGE;
}

/** `registry`: true (the default port), false, or the port on the runner. */
function buildRegistry(value: string | undefined, r: FieldReader): ClusterRegistrySpec | undefined {
  if (value === undefined || value === "false") return undefined;
  if (value === "true") return { port: DEFAULT_REGISTRY_PORT };
  const port = /^\d{1,5}$/.test(value) ? Number(value) : NaN;
  if (port >= 1 && port <= 65535) return { port };
  r.report("registry", `${q(value)} is not true, false or a port number from 1 to 65535`);
  return undefined;
}

function buildCni(input: ClusterInput, r: FieldReader, ctx: PathContext): ClusterSpec["cni"] {
  const cni = input.cni;
  if (cni === undefined) return { type: "bridge" };
  const manifest = (value: string, path: string): ClusterSpec["cni"] => {
    const resolved = fileOrURL(value, path, r, ctx);
    return resolved !== undefined ? { type: "manifest", manifest: resolved } : { type: "bridge" };
  };
  if (cni.text !== undefined) {
    if (cni.text === "bridge" || cni.text === "none") return { type: cni.text };
    const looksLikeFile = /\//.test(cni.text) || /\.(ya?ml|json)$/i.test(cni.text);
    if (!looksLikeFile && !isOtherURL(cni.text)) {
      r.report(
        "cni",
        `${q(cni.text)} is not bridge, none, a manifest file (a path with "/" or ending in .yaml, .yml or .json) or an https URL`,
      );
      return { type: "bridge" };
    }
    return manifest(cni.text, "cni");
  }
  const types: CniType[] = ["bridge", "none", "manifest"];
  if (!r.required(cni.type, "cni.type", types.join(", "))) return { type: "bridge" };
  if (!types.includes(cni.type as CniType)) {
    r.report("cni.type", `${q(cni.type)} is not one of ${types.join(", ")}`);
    return { type: "bridge" };
  }
  if (cni.type === "manifest") {
    if (!r.required(cni.manifest, "cni.manifest", "a manifest path or https URL")) {
      return { type: "bridge" };
    }
    return manifest(cni.manifest!, "cni.manifest");
  }
  if (cni.manifest !== undefined) {
    r.report("cni.manifest", `is only used with type: manifest, not ${cni.type}`);
  }
  return { type: cni.type as CniType };
}

/** The Cluster's field where set, else the kubeadm document's; refuses the two differing. */
function reconcile<T>(
  clusterValue: T | undefined,
  clusterPath: string,
  kubeadm: { value: T | undefined; field: string; where: string },
  same: (a: T, b: T) => boolean,
  r: FieldReader,
): T | undefined {
  if (
    clusterValue !== undefined &&
    kubeadm.value !== undefined &&
    !same(clusterValue, kubeadm.value)
  ) {
    r.report(
      clusterPath,
      `${q(clusterValue)} differs from ${kubeadm.field} ${q(kubeadm.value)} (in ${kubeadm.where}); set it in one place`,
    );
  }
  return clusterValue ?? kubeadm.value;
}

/** kubeadm settings the Cluster owns per node, or that kubeforge up sets itself. */
function checkKubeadmOwnership(
  input: ClusterInput,
  nodes: ClusterNodeSpec[],
  ctx: BuildContext,
  r: FieldReader,
): void {
  const { docs, whereOf } = ctx.kubeadm;
  const refuse = (where: string | undefined, field: string, why: string) =>
    r.problems.push(`${where ?? ctx.source}: ${field}: ${why}`);
  for (const [key, kind] of [
    ["init", "InitConfiguration"],
    ["join", "JoinConfiguration"],
  ] as const) {
    const doc = docs[key];
    if (!doc) continue;
    const where = whereOf[key];
    if (doc.nodeRegistration?.name) {
      refuse(
        where,
        `${kind}.nodeRegistration.name`,
        "node names come from the Cluster's nodes[].name; remove it",
      );
    }
    if (doc.nodeRegistration?.taints != null && nodes.some((n) => n.taints !== undefined)) {
      const which = nodes.findIndex((n) => n.taints !== undefined);
      refuse(
        where,
        `${kind}.nodeRegistration.taints`,
        `conflicts with nodes[${which}].taints; set taints on the Cluster's nodes only`,
      );
    }
    if (doc.patches?.directory && input.kubeadm?.patchesDir !== undefined) {
      refuse(
        where,
        `${kind}.patches.directory`,
        "conflicts with the Cluster's kubeadm.patchesDir (which kubeforge copies to every node); keep one",
      );
    }
    if (doc.dryRun !== undefined) {
      refuse(where, `${kind}.dryRun`, "use kubeforge up --dry-run instead");
    }
  }
  if (docs.init?.localAPIEndpoint?.advertiseAddress) {
    refuse(
      whereOf.init,
      "InitConfiguration.localAPIEndpoint.advertiseAddress",
      "node addresses come from the Cluster's nodes[].address; remove it",
    );
  }
  if (docs.join?.controlPlane?.localAPIEndpoint?.advertiseAddress) {
    refuse(
      whereOf.join,
      "JoinConfiguration.controlPlane.localAPIEndpoint.advertiseAddress",
      "node addresses come from the Cluster's nodes[].address; remove it",
    );
  }
  if (docs.join?.discovery?.bootstrapToken || docs.join?.discovery?.file) {
    refuse(
      whereOf.join,
      "JoinConfiguration.discovery",
      "kubeforge up sets discovery itself (a fresh token and the CA pin); remove it",
    );
  }
}

// ---- prepare --------------------------------------------------------------------------------

// containerd's hosts directory names a registry's folder host[:port], or _default for any
// registry (containerd docs/hosts.md); node/runtime/containerd-config.ts writes them.
const REGISTRY_HOST =
  /^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*(:\d{1,5})?$/;

/** Why a URL cannot be a registry mirror or a download base; undefined when it can. */
function urlProblem(text: string, schemes: readonly string[]): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return `${q(text)} is not a URL`;
  }
  if (!schemes.includes(url.protocol) || url.hostname === "") {
    return `${q(text)} must be an ${schemes.map((s) => `${s}//`).join(" or ")} URL`;
  }
  if (url.username !== "" || url.password !== "" || url.search !== "" || url.hash !== "") {
    return `${q(text)} must not carry credentials, a query or a fragment`;
  }
  return undefined;
}

function buildPrepare(input: ClusterInput, r: FieldReader): ClusterPrepareSpec {
  const prepare = defaultPrepare();
  const given = input.prepare;
  if (!given) return prepare;
  if (given.enabled !== undefined) prepare.enabled = given.enabled;
  if (given.installPackages !== undefined) prepare.installPackages = given.installPackages;
  if (given.prePullImages !== undefined) prepare.prePullImages = given.prePullImages;
  for (const [registry, urls] of Object.entries(given.registryMirrors ?? {})) {
    const path = `prepare.registryMirrors[${q(registry)}]`;
    if (registry !== "_default" && !REGISTRY_HOST.test(registry)) {
      r.report(
        path,
        `${q(registry)} is not a registry host such as docker.io or registry.local:5000 (or _default for every registry)`,
      );
    }
    if (urls.length === 0) r.report(path, "must list at least one mirror URL");
    urls.forEach((url, i) => {
      // http:// too: a local pull-through cache (registry:2 on :5000) is usually plain HTTP.
      const problem = urlProblem(url, ["https:", "http:"]);
      if (problem) r.report(`${path}[${i}]`, problem);
    });
    prepare.registryMirrors[registry] = urls;
  }
  for (const key of DOWNLOADS_FIELDS) {
    const url = given.downloads?.[key];
    if (url === undefined) continue;
    // https only: the checksum comes from the same server as the binary it checks.
    const problem = urlProblem(url, ["https:"]);
    if (problem) r.report(`prepare.downloads.${key}`, problem);
    prepare.downloads[key] = url.replace(/\/+$/, "");
  }
  return prepare;
}

// ---- the whole spec -------------------------------------------------------------------------

/** The cluster's networking, reconciled with the ClusterConfiguration's, and kubeadm's checks of it. */
function buildNetworking(
  input: ClusterInput,
  cni: ClusterSpec["cni"],
  r: FieldReader,
  ctx: BuildContext,
): ClusterSpec["networking"] {
  const cc = ctx.kubeadm.docs.cluster;
  const ccWhere = ctx.kubeadm.whereOf.cluster ?? ctx.source;
  const origins: Record<NetworkingField, NetworkingOrigin> = {
    podSubnet: "default",
    serviceSubnet: "default",
    dnsDomain: "default",
  };
  const net = (field: NetworkingField, fallback: string): string => {
    const own = input.networking?.[field];
    const theirs = cc?.networking?.[field] || undefined;
    if (own !== undefined && own !== "") origins[field] = "cluster";
    else if (theirs !== undefined) origins[field] = "kubeadm";
    const chosen = reconcile(
      own === "" ? undefined : own,
      `networking.${field}`,
      { value: theirs, field: `ClusterConfiguration.networking.${field}`, where: ccWhere },
      field === "dnsDomain" ? (a, b) => a === b : sameCIDRs,
      r,
    );
    return chosen ?? fallback;
  };
  const ranges = FAMILY_SUBNETS[ctx.ipFamily?.family ?? "ipv4"];
  const networking = {
    podSubnet:
      input.networking?.podSubnet === "" && !cc?.networking?.podSubnet
        ? ""
        : net("podSubnet", ranges.podSubnet),
    serviceSubnet: net("serviceSubnet", ranges.serviceSubnet),
    dnsDomain: net("dnsDomain", DEFAULT_DNS_DOMAIN),
  };
  if (ctx.ipFamily) checkFamily(networking, origins, ctx.ipFamily, r, ccWhere);
  if (networking.podSubnet === "" && cni.type === "bridge") {
    r.report(
      "networking.podSubnet",
      "the built-in bridge CNI needs a pod range; set one (default 10.244.0.0/16) or choose cni: none or a manifest",
    );
  }
  reportKubeadmValidation(
    ctx.kubeadm,
    {
      ...(networking.podSubnet !== "" ? { podSubnet: networking.podSubnet } : {}),
      serviceSubnet: networking.serviceSubnet,
      dnsDomain: networking.dnsDomain,
    },
    origins,
    r,
  );
  return networking;
}

/**
 * The ranges given (by the Cluster, an override or the ClusterConfiguration) against the IP
 * family asked for: a contradiction names both.
 */
function checkFamily(
  networking: { podSubnet: string; serviceSubnet: string },
  origins: Readonly<Record<NetworkingField, NetworkingOrigin>>,
  ipFamily: { family: ClusterIPFamily; origin: string },
  r: FieldReader,
  ccWhere: string,
): void {
  for (const field of ["podSubnet", "serviceSubnet"] as const) {
    const value = networking[field];
    if (value === "" || origins[field] === "default") continue;
    const problem = familyProblem(ipFamily.family, value);
    if (problem === undefined) continue;
    const where =
      origins[field] === "kubeadm"
        ? `ClusterConfiguration.networking.${field} in ${ccWhere}`
        : (r.originOf(`networking.${field}`) ?? r.where(`networking.${field}`));
    r.problems.push(
      `${ipFamily.origin}: ${q(ipFamily.family)} contradicts ${where} (${q(value)}): ${problem}`,
    );
  }
}

/**
 * An IPv6-only cluster needs nodes that advertise IPv6 addresses: a node whose `address` is IPv4,
 * or a container node (kubeforge's Docker network is IPv4), cannot be one.
 */
function checkIPv6Nodes(nodes: ClusterNodeSpec[], origin: string, r: FieldReader): void {
  nodes.forEach((n, i) => {
    if (n.address !== undefined && parseIP(n.address)?.kind() === "ipv4") {
      r.problems.push(
        `${origin}: "ipv6" contradicts ${r.where(`nodes[${i}].address`)} (${q(n.address)}): an IPv6 cluster's nodes advertise IPv6 addresses`,
      );
    } else if (n.host === "docker") {
      r.problems.push(
        `${origin}: "ipv6" is not available for container nodes (${n.name}): their Docker network is IPv4; use ipv4`,
      );
    }
  });
}

/**
 * Dual-stack gives every node's kubelet a node-ip pair (the kubeadm docs' "Dual-stack support
 * with kubeadm"), which `up` sets from nodes[].address and detection: an address pair written for
 * a cluster that is not dual-stack, a container node (its Docker network is IPv4 only) and a
 * node-ip of the user's in the kubeadm documents are refused.
 */
function checkDualStackNodes(
  nodes: ClusterNodeSpec[],
  networking: ClusterSpec["networking"],
  r: FieldReader,
  ctx: BuildContext,
): void {
  const dual = dualStackPrimary(networking) !== undefined;
  nodes.forEach((n, i) => {
    if (!dual && n.address?.includes(",")) {
      r.report(
        `nodes[${i}].address`,
        `${q(n.address)}: a pair of addresses is for a dual-stack cluster (ip-family dual, or a pod or service range of each family); give one address`,
      );
    }
  });
  if (!dual) return;
  const origin = ctx.ipFamily?.origin ?? r.where("networking");
  const containers = nodes.filter((n) => n.host === "docker").map((n) => n.name);
  if (containers.length > 0) {
    r.problems.push(
      `${origin}: dual-stack is not available for container nodes (${containers.join(", ")}): their Docker network is IPv4, so they have no IPv6 address for the kubelet's node-ip; use ipv4`,
    );
  }
  const { docs, whereOf } = ctx.kubeadm;
  for (const [key, kind] of [
    ["init", "InitConfiguration"],
    ["join", "JoinConfiguration"],
  ] as const) {
    if (docs[key]?.nodeRegistration?.kubeletExtraArgs?.some((a) => a.name === "node-ip")) {
      r.problems.push(
        `${whereOf[key] ?? ctx.source}: ${kind}.nodeRegistration.kubeletExtraArgs node-ip: in a dual-stack cluster kubeforge sets each node's node-ip pair from nodes[].address (or the node's detected addresses); remove it, and write a node's pair as its address ("192.0.2.10,2001:db8::10")`,
      );
    }
  }
}

/** The kubeadm documents, decoded once, and where they came from. */
function buildKubeadm(
  input: ClusterInput,
  version: string,
  r: FieldReader,
  ctx: BuildContext,
): ClusterSpec["kubeadm"] {
  const kubeadm: ClusterSpec["kubeadm"] = {};
  if (ctx.kubeadm.documents !== undefined) kubeadm.documents = ctx.kubeadm.documents;
  const { docs } = ctx.kubeadm;
  // Documents the user wrote, or ones an override made (feature gates): up builds on them.
  if (ctx.kubeadm.documents !== undefined || docs.cluster || docs.kubelet || docs.kubeProxy) {
    // Warnings were given at load; the decoded documents are kept without them.
    const { warnings: _given, ...config } = docs;
    kubeadm.config = config;
  }
  if (ctx.configFile !== undefined) kubeadm.configFile = ctx.configFile;
  const v1beta3 = ctx.kubeadm.docs.v1beta3Documents;
  if (v1beta3?.length) {
    kubeadm.v1beta3Documents = [...v1beta3];
    // Known now when the version names its minor; a bare label waits for up to resolve it.
    const minor = /^(?:v|stable-)1\.(\d+)/.exec(version)?.[1];
    const release =
      minor !== undefined ? RELEASES.find((x) => x.minor === Number(minor)) : undefined;
    r.problems.push(...removedAPIVersionProblems(v1beta3, release));
  }
  if (input.kubeadm?.patchesDir !== undefined) {
    const resolved = resolveRunnerPath(input.kubeadm.patchesDir, ctx);
    if (typeof resolved === "string") kubeadm.patchesDir = resolved;
    else r.report("kubeadm.patchesDir", `${q(input.kubeadm.patchesDir)}: ${resolved.problem}`);
  }
  return kubeadm;
}

/**
 * The defaulted ClusterSpec for a decoded Cluster document. Problems go to the reader; the
 * spec returned is only meaningful when there were none.
 */
export function buildClusterSpec(
  input: ClusterInput,
  r: FieldReader,
  ctx: BuildContext,
): ClusterSpec {
  const { docs, whereOf } = ctx.kubeadm;
  const cc = docs.cluster;
  const ccWhere = whereOf.cluster ?? ctx.source;

  const name = input.name ?? DEFAULT_CLUSTER_NAME;
  if (input.name !== undefined && (name.length > 63 || !DNS1123_LABEL.test(name))) {
    r.report(
      "name",
      `${q(name)} is not a DNS label (at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit)`,
    );
  }

  // kubernetesVersion
  if (input.kubernetesVersion !== undefined) {
    const problem = clusterVersionProblem(input.kubernetesVersion);
    if (problem) r.report("kubernetesVersion", problem);
  }
  const fromCluster =
    input.kubernetesVersion !== undefined
      ? normalizeClusterVersion(input.kubernetesVersion)
      : undefined;
  const fromKubeadm = cc?.kubernetesVersion
    ? normalizeClusterVersion(cc.kubernetesVersion)
    : undefined;
  const version =
    reconcile(
      fromCluster,
      "kubernetesVersion",
      { value: fromKubeadm, field: "ClusterConfiguration.kubernetesVersion", where: ccWhere },
      (a, b) => a === b,
      r,
    ) ?? DEFAULT_KUBERNETES_VERSION;

  // controlPlaneEndpoint: kubeadm gives an endpoint without a port the local bind port
  // (SetClusterDynamicDefaults).
  const bindPort = docs.init?.localAPIEndpoint?.bindPort || DEFAULT_ENDPOINT_PORT;
  let endpointFromCluster: string | undefined;
  if (input.controlPlaneEndpoint !== undefined) {
    endpointFromCluster = normalizeEndpoint(input.controlPlaneEndpoint, bindPort);
    if (endpointFromCluster === undefined) {
      const hp = parseHostPort(input.controlPlaneEndpoint);
      r.report(
        "controlPlaneEndpoint",
        `${q(input.controlPlaneEndpoint)} is not "host" or "host:port": ${"problem" in hp ? hp.problem : ""}`,
      );
    }
  }
  const endpoint = reconcile(
    endpointFromCluster,
    "controlPlaneEndpoint",
    {
      value: cc?.controlPlaneEndpoint
        ? normalizeEndpoint(cc.controlPlaneEndpoint, bindPort)
        : undefined,
      field: "ClusterConfiguration.controlPlaneEndpoint",
      where: ccWhere,
    },
    (a, b) => a === b,
    r,
  );

  // networking: the Cluster's, else the ClusterConfiguration's, else the defaults.
  const cni = buildCni(input, r, ctx);
  const networking = buildNetworking(input, cni, r, ctx);
  const kubeadm = buildKubeadm(input, version, r, ctx);

  // ssh
  const clusterSsh: ClusterSshSpec = {
    ...checkSsh(input.ssh, "ssh", r, ctx),
    port: input.ssh?.port ?? DEFAULT_SSH_PORT,
  };
  if (clusterSsh.passphrase !== undefined && !hasKey(clusterSsh)) {
    r.report("ssh.passphrase", "is set without privateKey or privateKeyFile");
  }

  const nodes = buildNodes(input, name, clusterSsh, r, ctx);
  // Without workers, workloads can only run on control planes: those that keep kubeadm's
  // default get no taint (as kind and minikube do for their single node).
  if (nodes.length > 0 && nodes.every((n) => n.role === "control-plane")) {
    for (const n of nodes) n.taints ??= [];
  }
  checkKubeadmOwnership(input, nodes, ctx, r);
  if (ctx.ipFamily?.family === "ipv6") checkIPv6Nodes(nodes, ctx.ipFamily.origin, r);
  checkDualStackNodes(nodes, networking, r, ctx);

  const wait = input.wait ?? DEFAULT_WAIT;
  if (input.wait !== undefined) {
    if (!isGoDuration(input.wait)) {
      r.report("wait", `${q(input.wait)} is not a duration (examples: "5m", "90s", "1h30m")`);
    } else if ((tryParseGoDurationNanos(input.wait) ?? 0n) <= 0n) {
      r.report("wait", `${q(input.wait)} must be longer than zero`);
    }
  }

  const spec: ClusterSpec = {
    apiVersion: CLUSTER_API_VERSION,
    kind: CLUSTER_KIND,
    name,
    kubernetesVersion: version,
    ...(endpoint !== undefined ? { controlPlaneEndpoint: endpoint } : {}),
    networking,
    cni,
    storage: buildStorage(input.storage, r),
    kubeadm,
    ssh: clusterSsh,
    nodes,
    wait,
    concurrency: input.concurrency ?? DEFAULT_CONCURRENCY,
    prepare: buildPrepare(input, r),
  };
  const registry = buildRegistry(input.registry, r);
  if (registry !== undefined) spec.registry = registry;
  // A node behind a jump host sees the runner's connections come from the jump host.
  const jumped = registry ? nodes.filter((n) => n.ssh?.jumpHost !== undefined) : [];
  if (jumped.length > 0) {
    r.report(
      "registry",
      `the registry on the runner cannot be reached from nodes behind ssh.jumpHost (${jumped.map((n) => n.name).join(", ")})`,
    );
  }
  const docker = buildDocker(input.docker, nodes, r);
  if (docker !== undefined) spec.docker = docker;
  if (input.kubeletBinary !== undefined) {
    const binary = fileOrURL(input.kubeletBinary, "kubeletBinary", r, ctx);
    if (binary !== undefined) spec.kubeletBinary = binary;
  }
  if (input.skipPhases !== undefined) {
    input.skipPhases.forEach((phase, i) => {
      if (!PHASE_PATH.test(phase)) {
        r.report(`skipPhases[${i}]`, `${q(phase)} is not a phase name such as "addon/kube-proxy"`);
      }
    });
    spec.skipPhases = input.skipPhases;
  }
  return spec;
}
