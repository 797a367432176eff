import { hostname as osHostname } from "node:os";
import { load } from "js-yaml";
import type { HostFiles } from "./host-files.js";
import { DEFAULT_LABEL_KEYS } from "./node-status.js";

// SIMULATION (test double). What the kubelet reads at start, from the files the kubeadm deb's
// systemd drop-in names (10-kubeadm.conf): --config=/var/lib/kubelet/config.yaml,
// --kubeconfig=/etc/kubernetes/kubelet.conf, --bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf,
// and the flags in $KUBELET_KUBEADM_ARGS (/var/lib/kubelet/kubeadm-flags.env) and
// $KUBELET_EXTRA_ARGS (/etc/default/kubelet), in that order on the command line (later wins, as pflag).

export const KUBELET_CONFIG_FILE = "/var/lib/kubelet/config.yaml";
export const KUBEADM_FLAGS_ENV = "/var/lib/kubelet/kubeadm-flags.env";
export const KUBELET_DEFAULTS_ENV = "/etc/default/kubelet";
export const KUBELET_KUBECONFIG = "/etc/kubernetes/kubelet.conf";
export const BOOTSTRAP_KUBECONFIG = "/etc/kubernetes/bootstrap-kubelet.conf";
/** --cert-dir default (cmd/kubelet/app/options/options.go: <root-dir>/pki). */
export const DEFAULT_CERT_DIR = "/var/lib/kubelet/pki";

/** The KubeletConfiguration fields the simulation acts on, defaulted as the kubelet does. */
export interface KubeletSettings {
  healthzBindAddress: string;
  healthzPort: number;
  staticPodPath: string;
  rotateCertificates: boolean;
  cgroupDriver: string;
  registerNode: boolean;
  /** KubeletConfiguration.port: the kubelet API port the Node advertises (not served here). */
  port: number;
  maxPods: number;
  registerWithTaints: Taint[];
}

export interface Taint {
  key: string;
  value?: string;
  effect: string;
}

/** Kubelet command-line flags the simulation honours. */
export interface KubeletFlags {
  hostnameOverride?: string;
  nodeIPs: string[];
  nodeLabels: Record<string, string>;
  registerWithTaints?: Taint[];
  kubeconfig: string;
  bootstrapKubeconfig: string;
  certDir: string;
  /** Every flag as given, for messages. */
  raw: Record<string, string>;
}

export interface KubeletStartConfig {
  settings: KubeletSettings;
  flags: KubeletFlags;
  nodeName: string;
  hostname: string;
}

/**
 * Reads config.yaml with the kubelet's defaults for absent fields
 * (pkg/kubelet/apis/config/v1beta1/defaults.go: healthzBindAddress 127.0.0.1, healthzPort 10248,
 * registerNode true, port 10250, maxPods 110, cgroupDriver cgroupfs; staticPodPath and
 * rotateCertificates have no default, i.e. "" and false). A missing file fails the start as it
 * fails the kubelet ("failed to load Kubelet config file"), the crash loop every kubeadm user has
 * seen before `kubeadm init` writes the file.
 */
export async function readKubeletSettings(files: HostFiles, path = KUBELET_CONFIG_FILE) {
  const text = await files.readText(path);
  if (text === undefined) {
    throw new Error(
      `failed to load Kubelet config file ${path}: open ${path}: no such file or directory`,
    );
  }
  let doc: unknown;
  try {
    doc = load(text);
  } catch (e) {
    throw new Error(`failed to load Kubelet config file ${path}: ${(e as Error).message}`, {
      cause: e,
    });
  }
  const cfg = (doc ?? {}) as Record<string, unknown>;
  // The kubelet decodes through its scheme: only this group/version/kind is accepted
  // (pkg/kubelet/kubeletconfig/util/codec).
  if (cfg.apiVersion !== "kubelet.config.k8s.io/v1beta1" || cfg.kind !== "KubeletConfiguration") {
    throw new Error(
      `failed to load Kubelet config file ${path}: expected apiVersion kubelet.config.k8s.io/v1beta1 and kind KubeletConfiguration, got ${String(cfg.apiVersion)} ${String(cfg.kind)}`,
    );
  }
  const num = (v: unknown, d: number) => (typeof v === "number" ? v : d);
  const str = (v: unknown, d: string) => (typeof v === "string" ? v : d);
  const taints = Array.isArray(cfg.registerWithTaints)
    ? (cfg.registerWithTaints as Taint[]).map((t) => ({
        key: t.key,
        ...(t.value ? { value: t.value } : {}),
        effect: t.effect,
      }))
    : [];
  const settings: KubeletSettings = {
    healthzBindAddress: str(cfg.healthzBindAddress, "127.0.0.1"),
    healthzPort: num(cfg.healthzPort, 10248),
    staticPodPath: str(cfg.staticPodPath, ""),
    rotateCertificates: cfg.rotateCertificates === true,
    cgroupDriver: str(cfg.cgroupDriver, "cgroupfs"),
    registerNode: cfg.registerNode !== false,
    port: num(cfg.port, 10250),
    maxPods: num(cfg.maxPods, 110),
    registerWithTaints: taints,
  };
  return settings;
}

/**
 * Splits an EnvironmentFile the way systemd reads it (systemd.exec(5): KEY=VALUE lines, `#`
 * comments, double- or single-quoted values with backslash escapes). kubeadm writes the value
 * with Go's %q (kubeadm: phases/kubelet/flags.go), which this reads back.
 */
export function parseEnvironmentFile(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("#") || line.startsWith(";")) continue;
    const eq = line.indexOf("=");
    if (eq <= 0) continue;
    const key = line.slice(0, eq).trim();
    let value = line.slice(eq + 1).trim();
    const q = value[0];
    if ((q === '"' || q === "'") && value.endsWith(q) && value.length >= 2) {
      value = value.slice(1, -1);
      if (q === '"') value = value.replace(/\\(.)/g, "$1");
    }
    env[key] = value;
  }
  return env;
}

/**
 * systemd expands an unquoted `$VAR` in ExecStart= into words split at whitespace
 * (systemd.service(5) "Command lines"); that is how $KUBELET_KUBEADM_ARGS becomes flags.
 */
export function splitWords(value: string | undefined): string[] {
  return (value ?? "").split(/\s+/).filter((w) => w.length > 0);
}

/** pflag parsing of `--name=value` and `--name value`; later occurrences win. */
export function parseFlagWords(words: string[]): Record<string, string> {
  const flags: Record<string, string> = {};
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    if (!w.startsWith("-")) continue;
    const body = w.replace(/^--?/, "");
    const eq = body.indexOf("=");
    if (eq >= 0) flags[body.slice(0, eq)] = body.slice(eq + 1);
    else if (i + 1 < words.length && !words[i + 1]!.startsWith("-")) flags[body] = words[++i]!;
    else flags[body] = "true";
  }
  return flags;
}

/**
 * --register-with-taints: `key=value:Effect` or `key:Effect`, comma separated
 * (pkg/util/taints ParseTaints); only the three effects exist.
 */
export function parseTaints(spec: string): Taint[] {
  if (!spec) return [];
  return spec.split(",").map((item) => {
    const m = /^([^=:]+)(?:=([^:]*))?:(NoSchedule|PreferNoSchedule|NoExecute)$/.exec(item.trim());
    if (!m) throw new Error(`invalid taint spec: ${item}`);
    return { key: m[1]!, ...(m[2] ? { value: m[2] } : {}), effect: m[3]! };
  });
}

/** --node-labels: `k=v,k2=v2` (cliflag.ConfigurationMap). */
export function parseLabels(spec: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const item of spec.split(",")) {
    if (!item.trim()) continue;
    const eq = item.indexOf("=");
    if (eq < 0) throw new Error(`invalid --node-labels entry "${item}": expected key=value`);
    labels[item.slice(0, eq).trim()] = item.slice(eq + 1).trim();
  }
  return labels;
}

// staging/src/k8s.io/kubelet/pkg/apis/well_known_labels.go: the labels a kubelet may set on
// its own Node (the same well-known labels updateDefaultLabels restores), and the namespaces
// it may use freely.
const KUBELET_LABELS = new Set(DEFAULT_LABEL_KEYS);
const KUBELET_LABEL_NAMESPACES = ["kubelet.kubernetes.io", "node.kubernetes.io"];

const labelNamespace = (key: string) => (key.includes("/") ? key.split("/", 1)[0]! : "");
const inDomain = (ns: string, domain: string) => ns === domain || ns.endsWith(`.${domain}`);

/**
 * cmd/kubelet/app/options/options.go ValidateKubeletFlags: a --node-labels key in the
 * kubernetes.io or k8s.io namespaces must be a kubelet label, or the kubelet refuses to start
 * (the reason kubeadm never passes node-role.kubernetes.io/* through the kubelet).
 */
export function forbiddenNodeLabels(labels: Record<string, string>): string[] {
  return Object.keys(labels)
    .filter((k) => {
      const ns = labelNamespace(k);
      const kubernetes = inDomain(ns, "kubernetes.io") || inDomain(ns, "k8s.io");
      if (!kubernetes || KUBELET_LABELS.has(k)) return false;
      return !KUBELET_LABEL_NAMESPACES.some((allowed) => inDomain(ns, allowed));
    })
    .sort();
}

/** Reads the kubelet's flags from the two environment files of the kubeadm drop-in. */
export async function readKubeletFlags(files: HostFiles): Promise<KubeletFlags> {
  const kubeadmEnv = parseEnvironmentFile((await files.readText(KUBEADM_FLAGS_ENV)) ?? "");
  const defaultsEnv = parseEnvironmentFile((await files.readText(KUBELET_DEFAULTS_ENV)) ?? "");
  const raw = parseFlagWords([
    ...splitWords(kubeadmEnv.KUBELET_KUBEADM_ARGS),
    ...splitWords(defaultsEnv.KUBELET_EXTRA_ARGS),
  ]);
  const nodeLabels = parseLabels(raw["node-labels"] ?? "");
  const forbidden = forbiddenNodeLabels(nodeLabels);
  if (forbidden.length > 0) {
    throw new Error(
      `unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: [${forbidden.join(" ")}]`,
    );
  }
  return {
    ...(raw["hostname-override"] ? { hostnameOverride: raw["hostname-override"] } : {}),
    nodeIPs: (raw["node-ip"] ?? "").split(",").filter(Boolean),
    nodeLabels,
    ...(raw["register-with-taints"] !== undefined
      ? { registerWithTaints: parseTaints(raw["register-with-taints"]) }
      : {}),
    kubeconfig: raw.kubeconfig ?? KUBELET_KUBECONFIG,
    bootstrapKubeconfig: raw["bootstrap-kubeconfig"] ?? BOOTSTRAP_KUBECONFIG,
    certDir: raw["cert-dir"] ?? DEFAULT_CERT_DIR,
    raw,
  };
}

/**
 * pkg/util/node GetHostname: --hostname-override, else the OS host name, trimmed and
 * lower-cased; with no cloud provider the node name is that host name
 * (cmd/kubelet/app/server.go getNodeName). `machineHostname` stands in for the OS host name of
 * a simulated node that shares the machine with others.
 */
export function kubeletHostname(override: string | undefined, machineHostname?: string): string {
  const name = (override || machineHostname || osHostname()).trim().toLowerCase();
  if (!name) throw new Error("empty hostname is invalid");
  return name;
}

export async function readKubeletStartConfig(
  files: HostFiles,
  machineHostname?: string,
): Promise<KubeletStartConfig> {
  const settings = await readKubeletSettings(files);
  const flags = await readKubeletFlags(files);
  const hostname = kubeletHostname(flags.hostnameOverride, machineHostname);
  return { settings, flags, hostname, nodeName: hostname };
}
