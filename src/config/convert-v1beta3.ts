import type {
  Arg,
  ClusterConfiguration,
  InitConfiguration,
  JoinConfiguration,
  LocalEtcd,
  NodeRegistrationOptions,
} from "./types.js";

// kubeadm.k8s.io/v1beta3 → the internal (v1beta4-shaped) form, following kubeadm's
// apis/kubeadm/v1beta3/conversion.go:
//  - extraArgs / kubeletExtraArgs maps become Arg lists sorted by name, then value (convertToArgs);
//  - nodeRegistration.imagePullSerial is set to true (v1beta3 had no such field);
//  - InitConfiguration and JoinConfiguration get default timeouts (SetDefaultTimeouts), with
//    ClusterConfiguration.apiServer.timeoutForControlPlane moving to
//    InitConfiguration.timeouts.controlPlaneComponentHealthCheck (SetConversionTimeoutControlPlane)
//    and JoinConfiguration.discovery.timeout to timeouts.discovery;
//  - ClusterConfiguration fields new in v1beta4 (encryptionAlgorithm, validity periods) are left
//    to defaulting, which gives the values the conversion hard-codes (RSA-2048, 8760h, 87600h).
// The input is what load.ts decoded with the v1beta3 schema (types checked, unknown fields
// refused), so only the shape differences are handled here.

type Obj = Record<string, unknown>;

/** kubeadm's convertToArgs: a map becomes a list sorted by name, then by value. */
export function argsFromMap(map: Record<string, string> | undefined): Arg[] | undefined {
  if (map === undefined) return undefined;
  return Object.entries(map)
    .map(([name, value]) => ({ name, value }))
    .sort((a, b) =>
      a.name === b.name ? compareBytes(a.value, b.value) : compareBytes(a.name, b.name),
    );
}

/** Go string comparison (bytewise on UTF-8, which is code-point order). */
function compareBytes(a: string, b: string): number {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return Buffer.compare(x, y);
}

function withArgs<T extends Obj>(component: T | undefined, key: string): T | undefined {
  if (component === undefined) return undefined;
  const out: Obj = { ...component };
  if (component[key] !== undefined)
    out[key] = argsFromMap(component[key] as Record<string, string>);
  return out as T;
}

function convertNodeRegistration(nr: Obj | undefined): NodeRegistrationOptions {
  const out = (withArgs(nr, "kubeletExtraArgs") ?? {}) as NodeRegistrationOptions;
  return { ...out, imagePullSerial: true };
}

/** A decoded v1beta3 InitConfiguration in the internal form (timeouts get kubeadm's defaults later). */
export function convertInitConfigurationV1beta3(
  doc: Obj,
  timeoutForControlPlane?: string,
): InitConfiguration {
  const out = { ...doc };
  out.nodeRegistration = convertNodeRegistration(doc.nodeRegistration as Obj | undefined);
  out.timeouts =
    timeoutForControlPlane === undefined
      ? {}
      : { controlPlaneComponentHealthCheck: timeoutForControlPlane };
  return out;
}

export interface ConvertedClusterConfiguration {
  cluster: ClusterConfiguration;
  /** apiServer.timeoutForControlPlane when set and non-zero: it belongs to InitConfiguration now. */
  timeoutForControlPlane?: string;
}

/** A decoded v1beta3 ClusterConfiguration in the internal form. */
export function convertClusterConfigurationV1beta3(doc: Obj): ConvertedClusterConfiguration {
  const out = { ...doc };
  let timeoutForControlPlane: string | undefined;
  const apiServer = doc.apiServer as Obj | undefined;
  if (apiServer !== undefined) {
    const { timeoutForControlPlane: t, ...rest } = apiServer;
    // kubeadm only carries a non-zero value over (conversion.go checks Duration != 0).
    if (typeof t === "string" && t !== "0s") timeoutForControlPlane = t;
    out.apiServer = withArgs(rest, "extraArgs");
  }
  for (const key of ["controllerManager", "scheduler"] as const) {
    if (doc[key] !== undefined) out[key] = withArgs(doc[key] as Obj, "extraArgs");
  }
  const etcd = doc.etcd as { local?: Obj; external?: Obj } | undefined;
  if (etcd?.local !== undefined) {
    out.etcd = { ...etcd, local: withArgs(etcd.local, "extraArgs") as LocalEtcd };
  }
  return {
    cluster: out,
    ...(timeoutForControlPlane ? { timeoutForControlPlane } : {}),
  };
}

/** A decoded v1beta3 JoinConfiguration in the internal form. */
export function convertJoinConfigurationV1beta3(doc: Obj): JoinConfiguration {
  const out = { ...doc };
  out.nodeRegistration = convertNodeRegistration(doc.nodeRegistration as Obj | undefined);
  const discovery = doc.discovery as Obj | undefined;
  out.timeouts = {};
  if (discovery !== undefined) {
    const { timeout, ...rest } = discovery;
    out.discovery = rest;
    if (typeof timeout === "string") out.timeouts = { discovery: timeout };
  }
  return out;
}
