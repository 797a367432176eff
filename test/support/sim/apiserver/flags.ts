// SIMULATION (test double). Reading the static pod commands kubeadm writes, to start the
// simulated components with the same settings. Flags are "--name=value" (kubeadm's form,
// k8s: cmd/kubeadm/app/util/arguments.go BuildArgumentListFromMap); "--name value" is accepted too.
// Defaults are the binaries' own. k8s: cmd/kube-apiserver/app/options,
// staging/src/k8s.io/apiserver/pkg/server/options/serving.go (--bind-address 0.0.0.0,
// --secure-port 6443), staging/src/k8s.io/apiserver/pkg/server/options/authentication.go
// (--anonymous-auth true), pkg/kubeapiserver/options/authorization.go (--authorization-mode),
// staging/src/k8s.io/apiserver/pkg/server/options/etcd.go (--etcd-servers, --etcd-cafile,
// --etcd-certfile, --etcd-keyfile, --etcd-prefix default "/registry"),
// cmd/kube-controller-manager/app/options (--controllers, --cluster-signing-duration 8760h).
import type { FakeControllersOptions } from "./controllers/index.js";
import type { FakeApiServerOptions } from "./server.js";
import { parsePortRange } from "./service-allocation.js";

export function parseFlags(command: string[], binary: string): Map<string, string> {
  if (command.length === 0 || !command[0]!.endsWith(binary)) {
    throw new Error(`the command does not start ${binary}: ${JSON.stringify(command.slice(0, 1))}`);
  }
  const flags = new Map<string, string>();
  for (let i = 1; i < command.length; i++) {
    const arg = command[i]!;
    if (!arg.startsWith("--")) continue;
    const eq = arg.indexOf("=");
    if (eq >= 0) flags.set(arg.slice(2, eq), arg.slice(eq + 1));
    else if (i + 1 < command.length && !command[i + 1]!.startsWith("--"))
      flags.set(arg.slice(2), command[++i]!);
    else flags.set(arg.slice(2), "true");
  }
  return flags;
}

function required(flags: Map<string, string>, name: string, binary: string): string {
  const v = flags.get(name);
  if (v === undefined || v === "")
    throw new Error(`${binary} command has no --${name}, which the simulation needs`);
  return v;
}

function bool(v: string | undefined, dflt: boolean, name: string): boolean {
  if (v === undefined) return dflt;
  if (v === "true" || v === "1" || v === "t" || v === "T" || v === "TRUE" || v === "True")
    return true;
  if (v === "false" || v === "0" || v === "f" || v === "F" || v === "FALSE" || v === "False")
    return false;
  throw new Error(`--${name}=${v} is not a boolean`);
}

/** Go's time.ParseDuration ("8760h0m0s", "1h30m", "90s", "1.5h") in milliseconds. */
export function parseGoDuration(text: string): number {
  const units: Record<string, number> = {
    ns: 1e-6,
    us: 1e-3,
    µs: 1e-3,
    ms: 1,
    s: 1000,
    m: 60_000,
    h: 3_600_000,
  };
  if (text === "0") return 0;
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0;
  let pos = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text))) {
    total += Number(m[1]) * units[m[2]!]!;
    pos = re.lastIndex;
  }
  if (pos !== text.length || text.length === 0) throw new Error(`invalid duration "${text}"`);
  return total;
}

/** Options for startFakeApiServer from a kube-apiserver static pod command. */
export function apiServerOptionsFromCommand(
  command: string[],
  mapPath: (p: string) => string,
): FakeApiServerOptions {
  const bin = "kube-apiserver";
  const f = parseFlags(command, bin);
  const port = Number(f.get("secure-port") ?? "6443");
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`--secure-port=${f.get("secure-port")} is not a port`);
  const opts: FakeApiServerOptions = {
    bindAddress: f.get("bind-address") ?? "0.0.0.0",
    securePort: port,
    tlsCertFile: mapPath(required(f, "tls-cert-file", bin)),
    tlsPrivateKeyFile: mapPath(required(f, "tls-private-key-file", bin)),
    clientCAFile: mapPath(required(f, "client-ca-file", bin)),
    enableBootstrapTokenAuth: bool(
      f.get("enable-bootstrap-token-auth"),
      false,
      "enable-bootstrap-token-auth",
    ),
    anonymousAuth: bool(f.get("anonymous-auth"), true, "anonymous-auth"),
    authorizationModes: (f.get("authorization-mode") ?? "AlwaysAllow")
      .split(",")
      .map((s) => s.trim()),
    admissionPlugins: (f.get("enable-admission-plugins") ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean),
  };
  const adv = f.get("advertise-address");
  if (adv) opts.advertiseAddress = adv;
  const svc = f.get("service-cluster-ip-range");
  if (svc) opts.serviceClusterIPRange = svc;
  const nodePorts = f.get("service-node-port-range");
  if (nodePorts) opts.serviceNodePortRange = parsePortRange(nodePorts);
  const servers = (f.get("etcd-servers") ?? "")
    .split(",")
    .map((u) => u.trim())
    .filter(Boolean);
  if (servers.length > 0) {
    for (const u of servers) {
      if (!/^https?:\/\/[^/]+\/?$/.test(u))
        throw new Error(`--etcd-servers lists "${u}", which is not an etcd client URL`);
    }
    const path = (name: string) => {
      const v = f.get(name);
      return v ? mapPath(v) : undefined;
    };
    const [caFile, certFile, keyFile] = ["etcd-cafile", "etcd-certfile", "etcd-keyfile"].map(path);
    const prefix = f.get("etcd-prefix");
    opts.etcd = {
      servers,
      ...(caFile ? { caFile } : {}),
      ...(certFile ? { certFile } : {}),
      ...(keyFile ? { keyFile } : {}),
      ...(prefix ? { prefix } : {}),
    };
  }
  return opts;
}

/** Options for startFakeControllers from a kube-controller-manager static pod command. */
export function controllersOptionsFromCommand(
  command: string[],
  mapPath: (p: string) => string,
): FakeControllersOptions {
  const bin = "kube-controller-manager";
  const f = parseFlags(command, bin);
  const opts: FakeControllersOptions = {
    clusterSigningCertFile: mapPath(required(f, "cluster-signing-cert-file", bin)),
    clusterSigningKeyFile: mapPath(required(f, "cluster-signing-key-file", bin)),
    controllers: (f.get("controllers") ?? "*").split(",").map((s) => s.trim()),
  };
  const d = f.get("cluster-signing-duration");
  if (d !== undefined) opts.clusterSigningDuration = parseGoDuration(d);
  const root = f.get("root-ca-file");
  if (root) opts.rootCAFile = mapPath(root);
  // node-ipam-controller (cmd/kube-controller-manager/app/options: KubeCloudSharedOptions
  // --allocate-node-cidrs false, --cluster-cidr; NodeIPAMControllerOptions --node-cidr-mask-size*,
  // --service-cluster-ip-range), node-lifecycle-controller (--node-monitor-grace-period,
  // --node-startup-grace-period; GenericControllerManagerConfigurationOptions
  // --node-monitor-period) and leader election (component-base LeaderElectionConfiguration:
  // --leader-elect true, --leader-elect-lease-duration, -renew-deadline, -retry-period,
  // --leader-elect-resource-namespace, --leader-elect-resource-name).
  if (f.has("allocate-node-cidrs"))
    opts.allocateNodeCIDRs = bool(f.get("allocate-node-cidrs"), false, "allocate-node-cidrs");
  const cidr = f.get("cluster-cidr");
  if (cidr) opts.clusterCIDR = cidr;
  const svc = f.get("service-cluster-ip-range");
  if (svc) opts.serviceClusterIPRange = svc;
  const int = (name: string): number | undefined => {
    const v = f.get(name);
    if (v === undefined) return undefined;
    if (!/^\d+$/.test(v)) throw new Error(`--${name}=${v} is not a whole number`);
    return Number(v);
  };
  const masks = [
    ["node-cidr-mask-size", "nodeCIDRMaskSize"],
    ["node-cidr-mask-size-ipv4", "nodeCIDRMaskSizeIPv4"],
    ["node-cidr-mask-size-ipv6", "nodeCIDRMaskSizeIPv6"],
  ] as const;
  for (const [flag, field] of masks) {
    const n = int(flag);
    if (n !== undefined) opts[field] = n;
  }
  const duration = (name: string): number | undefined => {
    const v = f.get(name);
    return v === undefined ? undefined : parseGoDuration(v);
  };
  const durations = [
    ["node-monitor-grace-period", "nodeMonitorGracePeriod"],
    ["node-startup-grace-period", "nodeStartupGracePeriod"],
    ["node-monitor-period", "nodeMonitorPeriod"],
  ] as const;
  for (const [flag, field] of durations) {
    const ms = duration(flag);
    if (ms !== undefined) opts[field] = ms;
  }
  if (f.has("leader-elect")) opts.leaderElect = bool(f.get("leader-elect"), true, "leader-elect");
  const le: NonNullable<FakeControllersOptions["leaderElection"]> = {};
  const lease = duration("leader-elect-lease-duration");
  if (lease !== undefined) le.leaseDurationMs = lease;
  const renew = duration("leader-elect-renew-deadline");
  if (renew !== undefined) le.renewDeadlineMs = renew;
  const retry = duration("leader-elect-retry-period");
  if (retry !== undefined) le.retryPeriodMs = retry;
  const ns = f.get("leader-elect-resource-namespace");
  if (ns) le.namespace = ns;
  const name = f.get("leader-elect-resource-name");
  if (name) le.name = name;
  if (Object.keys(le).length > 0) opts.leaderElection = le;
  return opts;
}
