import { RELEASES } from "../versions.js";
import { parseGoBool } from "../feature-gates.js";
import { checkFeatureGates } from "../validate.js";
import { ipFamily, parseCIDR, splitCIDRs, type IPFamily } from "../network.js";
import type { Arg, ComponentConfig, ConfigDocuments, ControlPlaneComponent } from "../types.js";
import { KUBE_PROXY_CONFIG_API, KUBELET_CONFIG_API } from "../types.js";
import { quoteValue } from "../values.js";
import { DEFAULT_POD_SUBNET } from "./defaults.js";
import { DEFAULT_SERVICE_SUBNET } from "../defaults.js";

// Shortcuts that expand into kubeadm configuration, the way kind's Cluster fields do
// (kubernetes-sigs/kind pkg/cluster/internal/kubeadm/config.go, pkg/internal/apis/config/default.go):
// - feature gates: kubeadm's own go to ClusterConfiguration.featureGates; every other gate goes
//   to the components, as kind's `featureGates` does (its ConfigTemplateBetaV3 writes them into
//   the apiServer, controllerManager and scheduler `feature-gates` extraArgs and into the
//   KubeletConfiguration's and KubeProxyConfiguration's featureGates);
// - an IP family: the pod and service ranges of that family, unless given.
// Pure: the documents given are not changed; a new set is returned.

export type ClusterIPFamily = "ipv4" | "ipv6" | "dual";
export const IP_FAMILIES: readonly ClusterIPFamily[] = ["ipv4", "ipv6", "dual"];

/**
 * Ranges per family. IPv4: kubeforge's defaults (kubeadm's service range). IPv6: kind's
 * (default.go: a pod /56 because the controller-manager gives each node a /64; a service /112,
 * inside kube-apiserver's limit of /108). Dual: IPv4 first, so Services stay IPv4 by default.
 */
export const FAMILY_SUBNETS: Readonly<
  Record<ClusterIPFamily, { podSubnet: string; serviceSubnet: string }>
> = {
  ipv4: { podSubnet: DEFAULT_POD_SUBNET, serviceSubnet: DEFAULT_SERVICE_SUBNET },
  ipv6: { podSubnet: "fd00:10:244::/56", serviceSubnet: "fd00:10:96::/112" },
  dual: {
    podSubnet: `${DEFAULT_POD_SUBNET},fd00:10:244::/56`,
    serviceSubnet: `${DEFAULT_SERVICE_SUBNET},fd00:10:96::/112`,
  },
};

/**
 * Why `ranges` ("a" or "a,b") cannot serve `family`, or undefined. Dual-stack takes one range of
 * each family, in either order (kubeadm: the first decides the Service family).
 */
export function familyProblem(family: ClusterIPFamily, ranges: string): string | undefined {
  // A malformed range is validation's to report; here it is of no family.
  const families = splitCIDRs(ranges).map((c) => parseCIDR(c)?.family);
  if (family === "dual") {
    return families.length === 2 && families.includes(4) && families.includes(6)
      ? undefined
      : "dual-stack needs one IPv4 and one IPv6 range";
  }
  const wanted = family === "ipv4" ? 4 : 6;
  return families.length === 1 && families[0] === wanted
    ? undefined
    : `${family} needs one ${family === "ipv4" ? "IPv4" : "IPv6"} range`;
}

/**
 * The cluster's primary IP family when it is dual-stack (a pod or service range of each
 * family), else undefined. The primary family is the first service range's: kube-apiserver
 * refuses an advertise address of another family (cmd/kube-apiserver/app/options/validation.go
 * validatePublicIPServiceClusterIPRangeIPFamilies), and kind orders each node's node-ip pair by
 * it (kind pkg/cluster/internal/create/actions/config/config.go, kind#2484).
 */
export function dualStackPrimary(networking: {
  podSubnet: string;
  serviceSubnet: string;
}): IPFamily | undefined {
  const familiesOf = (ranges: string) => splitCIDRs(ranges).map((c) => parseCIDR(c)?.family);
  const pod = familiesOf(networking.podSubnet);
  const service = familiesOf(networking.serviceSubnet);
  const dual = (fams: (IPFamily | undefined)[]) => fams.includes(4) && fams.includes(6);
  if (!dual(pod) && !dual(service)) return undefined;
  return service[0] ?? pod[0];
}

/**
 * A node's kubelet node-ip pair in a dual-stack cluster: its two addresses, the primary
 * family's first (kubelet --node-ip takes "<IP>,<IP>", one of each family; the first is the
 * node's primary address).
 */
export function orderNodeIPs(
  addresses: readonly [string, string],
  primary: IPFamily,
): [string, string] {
  const [a, b] = addresses;
  return ipFamily(a) === primary ? [a, b] : [b, a];
}

// Every Kubernetes feature gate is a CamelCase Go identifier (pkg/features/kube_features.go,
// k8s.io/component-base/featuregate); "AllAlpha" and "AllBeta" are of that form too.
const GATE_NAME = /^[A-Z][A-Za-z0-9]*$/;

/**
 * Parses "A=true,B=false" (items separated by commas, spaces or new lines). Values are `true` or
 * `false` (as YAML 1.2 writes them: also True/TRUE, False/FALSE). A gate given twice with the
 * same value is one gate; with two values, a problem.
 */
export function parseFeatureGateList(
  text: string,
): { gates: Record<string, boolean> } | { problem: string } {
  const gates: Record<string, boolean> = {};
  for (const item of text.split(/[\s,]+/).filter((s) => s !== "")) {
    const eq = item.indexOf("=");
    const name = eq < 0 ? item : item.slice(0, eq);
    if (!GATE_NAME.test(name)) {
      return {
        problem: `${quoteValue(name)} is not a feature gate name (a CamelCase name such as InPlacePodVerticalScaling)`,
      };
    }
    if (eq < 0) return { problem: `${name} has no value; write ${name}=true or ${name}=false` };
    const text = item.slice(eq + 1);
    const value = ["true", "True", "TRUE"].includes(text)
      ? true
      : ["false", "False", "FALSE"].includes(text)
        ? false
        : undefined;
    if (value === undefined) {
      return { problem: `${name}=${quoteValue(text)}: the value must be true or false` };
    }
    if (name in gates && gates[name] !== value) {
      return { problem: `${name} is given twice, as true and as false` };
    }
    gates[name] = value;
  }
  return { gates };
}

/**
 * kubeadm's own gate names in any supported release (features.go InitFeatureGates), those it
 * has removed since included: such a gate is kubeadm's to refuse for the version (validation
 * says so), never a component's.
 */
export function kubeadmGateNames(): ReadonlySet<string> {
  const names = new Set<string>();
  for (const r of RELEASES) {
    for (const g of Object.keys(r.featureGates)) names.add(g);
    for (const g of r.graduatedFeatureGates ?? []) names.add(g);
  }
  return names;
}

export function splitFeatureGates(gates: Readonly<Record<string, boolean>>): {
  kubeadm: Record<string, boolean>;
  components: Record<string, boolean>;
} {
  const own = kubeadmGateNames();
  const kubeadm: Record<string, boolean> = {};
  const components: Record<string, boolean> = {};
  for (const [name, value] of Object.entries(gates)) {
    (own.has(name) ? kubeadm : components)[name] = value;
  }
  return { kubeadm, components };
}

/** A gate-to-value map written as a flag value: "A=true,B=false". */
const gateText = (gates: Readonly<Record<string, boolean>>) =>
  Object.entries(gates)
    .map(([k, v]) => `${k}=${v}`)
    .join(",");

/**
 * A `feature-gates` flag value as the components read it (component-base featuregate Set:
 * trimmed items, strconv.ParseBool values); an item it would refuse is the component's to
 * report and is left out here.
 */
function parseGateArg(value: string): Record<string, boolean> {
  const gates: Record<string, boolean> = {};
  for (const item of value.split(",")) {
    const eq = item.indexOf("=");
    const parsed = eq < 0 ? undefined : parseGoBool(item.slice(eq + 1).trim());
    if (parsed !== undefined) gates[item.slice(0, eq).trim()] = parsed;
  }
  return gates;
}

interface MergeContext {
  /** "input feature-gates". */
  origin: string;
  problems: string[];
}

/** Adds `wanted` to `theirs`; a gate set there to the other value is a problem naming `where`. */
function mergeGates(
  theirs: Readonly<Record<string, boolean>>,
  wanted: Readonly<Record<string, boolean>>,
  where: string,
  ctx: MergeContext,
): Record<string, boolean> {
  const added: Record<string, boolean> = {};
  for (const [name, value] of Object.entries(wanted)) {
    if (!(name in theirs)) added[name] = value;
    else if (theirs[name] !== value) {
      ctx.problems.push(
        `${ctx.origin}: ${name}=${value} contradicts ${name}=${theirs[name]} in ${where}; set it in one place`,
      );
    }
  }
  return added;
}

/** A control-plane component's extraArgs with the gates in its `feature-gates` flag. */
function withGateArg(
  args: readonly Arg[] | undefined,
  gates: Readonly<Record<string, boolean>>,
  where: string,
  ctx: MergeContext,
): Arg[] {
  const list = [...(args ?? [])];
  const flags = list.filter((a) => a.name === "feature-gates");
  const theirs = Object.assign({}, ...flags.map((a) => parseGateArg(a.value))) as Record<
    string,
    boolean
  >;
  const added = mergeGates(theirs, gates, where, ctx);
  if (Object.keys(added).length === 0) return list;
  const last = flags.at(-1);
  // The flag merges each occurrence (component-base featuregate Set): adding to the last one
  // keeps the user's order and value text.
  if (last === undefined) return [...list, { name: "feature-gates", value: gateText(added) }];
  return list.map((a) =>
    a === last ? { name: a.name, value: `${a.value},${gateText(added)}` } : a,
  );
}

/** A component config (KubeletConfiguration, KubeProxyConfiguration) with the gates added. */
function withGateField(
  config: ComponentConfig | undefined,
  base: { apiVersion: string; kind: string },
  gates: Readonly<Record<string, boolean>>,
  where: string,
  ctx: MergeContext,
): ComponentConfig {
  const doc: ComponentConfig = config ? structuredClone(config) : { ...base };
  const theirs = (doc.featureGates ?? {}) as Record<string, boolean>;
  doc.featureGates = { ...theirs, ...mergeGates(theirs, gates, where, ctx) };
  return doc;
}

/**
 * The documents with `gates` added. Where a document already sets a gate, the same value is
 * fine and the other value a problem (pushed to `problems`, starting with `origin`): neither
 * is chosen silently. `whereOf` names the document each kind came from in those problems.
 */
export function applyFeatureGates(
  docs: ConfigDocuments,
  gates: Readonly<Record<string, boolean>>,
  origin: string,
  whereOf: Partial<Record<"cluster" | "kubelet" | "kubeProxy", string>>,
  problems: string[],
): ConfigDocuments {
  const ctx: MergeContext = { origin, problems };
  const { kubeadm, components } = splitFeatureGates(gates);
  const out = structuredClone(docs);
  const ccWhere = (field: string) =>
    `ClusterConfiguration.${field}${whereOf.cluster ? ` (${whereOf.cluster})` : ""}`;
  const cluster = { ...out.cluster };
  if (Object.keys(kubeadm).length > 0) {
    const theirs = cluster.featureGates ?? {};
    cluster.featureGates = {
      ...theirs,
      ...mergeGates(theirs, kubeadm, ccWhere("featureGates"), ctx),
    };
  }
  if (Object.keys(components).length > 0) {
    for (const c of ["apiServer", "controllerManager", "scheduler"] as const) {
      const component: ControlPlaneComponent = { ...cluster[c] };
      component.extraArgs = withGateArg(
        component.extraArgs,
        components,
        ccWhere(`${c}.extraArgs feature-gates`),
        ctx,
      );
      cluster[c] = component;
    }
    const configs = [
      ["kubelet", KUBELET_CONFIG_API, "KubeletConfiguration"],
      ["kubeProxy", KUBE_PROXY_CONFIG_API, "KubeProxyConfiguration"],
    ] as const;
    for (const [key, apiVersion, kind] of configs) {
      const where = `${kind}.featureGates${whereOf[key] ? ` (${whereOf[key]})` : ""}`;
      out[key] = withGateField(out[key], { apiVersion, kind }, components, where, ctx);
    }
  }
  out.cluster = cluster;
  return out;
}

/**
 * kubeadm's own gates among `gates` checked against the Cluster's version when it names its
 * minor (an exact version, "stable-1.35"): a gate that release removed or locks is refused here,
 * naming `origin`, before any host is touched. A bare label is checked once `up` resolves it.
 */
export function kubeadmGateProblems(
  gates: Readonly<Record<string, boolean>>,
  version: string,
  origin: string,
): string[] {
  const minor = /^(?:v|stable-)1\.(\d+)/.exec(version)?.[1];
  const release = minor !== undefined ? RELEASES.find((r) => r.minor === Number(minor)) : undefined;
  if (release === undefined) return [];
  const out: string[] = [];
  checkFeatureGates(splitFeatureGates(gates).kubeadm, release, out);
  return out.map((p) => `${origin}: ${p}`);
}
