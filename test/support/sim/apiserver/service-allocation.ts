// SIMULATION (test double). What kube-apiserver allocates on a Service it stores: spec.clusterIP
// (and clusterIPs) from --service-cluster-ip-range, and for type NodePort or LoadBalancer a
// spec.ports[].nodePort from --service-node-port-range (default 30000-32767): a free port at
// random, or the one the Service asks for when it is in the range and free; a port out of the
// range or taken by another Service is refused as 422 Invalid on that port's nodePort field.
// An update keeps what was allocated when the new object leaves it out.
// k8s: pkg/registry/core/service/storage/alloc.go (allocClusterIPs; allocNodePorts:
// field.Invalid(spec.ports[i].nodePort, port, err.Error()) wrapped in errors.NewInvalid),
// pkg/registry/core/service/portallocator/allocator.go (ErrAllocated "provided port is already
// allocated"; ErrNotInRange "provided port is not in the valid range. The range of valid ports
// is %s", the range printed "30000-32767"; AllocateNext takes a free offset at random,
// allocator/bitmap.go), pkg/registry/core/service/storage/storage.go (patchAllocatedValues: an
// update that leaves clusterIP, or the nodePort of a port of the same name, empty keeps the
// allocated one),
// pkg/kubeapiserver/options/options.go (DefaultServiceNodePortRange 30000-32767),
// pkg/apis/core/v1/defaults.go SetDefaults_Service (type ClusterIP, externalTrafficPolicy
// Cluster for NodePort and LoadBalancer).
// SIMULATION LIMITS: what is taken is read from the stored Services (no allocation bitmap, no
// repair controller); a requested clusterIP is kept as asked (no "provided IP is already
// allocated"); IPv4 ranges only (a dual-stack range allocates from its IPv4 half); no
// static/dynamic sub-range preference; no healthCheckNodePort.
import ipaddr from "ipaddr.js";
import { str } from "./json.js";
import { fieldError, invalid } from "./status.js";
import type { Json } from "./store.js";

export interface PortRange {
  base: number;
  size: number;
}

export interface ServiceRanges {
  /** --service-cluster-ip-range; absent: no clusterIP is allocated. */
  clusterIPRange?: string;
  /** --service-node-port-range; default 30000-32767. */
  nodePortRange?: PortRange;
}

export const DEFAULT_NODE_PORT_RANGE: PortRange = { base: 30000, size: 2768 };

/** "30000-32767" or "30000+2767" (utilnet.ParsePortRange). */
export function parsePortRange(text: string): PortRange {
  const m = /^\s*(\d+)\s*([-+])\s*(\d+)\s*$/.exec(text) ?? /^\s*(\d+)\s*$/.exec(text);
  if (!m) throw new Error(`--service-node-port-range "${text}" is not a port range`);
  const base = Number(m[1]);
  const size = m[2] === "-" ? Number(m[3]) - base + 1 : m[2] === "+" ? Number(m[3]) + 1 : 1;
  if (size <= 0 || base + size - 1 > 65535) {
    throw new Error(`--service-node-port-range "${text}" is not a port range`);
  }
  return { base, size };
}

/** net.PortRange String(): "30000-32767". */
const rangeText = (r: PortRange) => `${r.base}-${r.base + r.size - 1}`;

interface ServicePort {
  name?: string;
  port?: number;
  protocol?: string;
  nodePort?: number;
}

const portsOf = (svc: Json): ServicePort[] =>
  ((svc.spec as Json | undefined)?.ports ?? []) as ServicePort[];

const usesNodePorts = (type: unknown) => type === "NodePort" || type === "LoadBalancer";

/** Nodeports every other stored Service holds. */
function takenPorts(others: readonly Json[]): Set<number> {
  const taken = new Set<number>();
  for (const s of others) for (const p of portsOf(s)) if (p.nodePort) taken.add(p.nodePort);
  return taken;
}

function randomFreePort(range: PortRange, taken: Set<number>): number | undefined {
  const start = Math.floor(Math.random() * range.size);
  for (let i = 0; i < range.size; i++) {
    const port = range.base + ((start + i) % range.size);
    if (!taken.has(port)) return port;
  }
  return undefined;
}

/** A random address of an IPv4 CIDR, neither its network nor its broadcast address. */
function randomIPv4(cidr: string, taken: Set<string>): string | undefined {
  const [addr, bits] = ipaddr.parseCIDR(cidr);
  if (addr.kind() !== "ipv4") return undefined;
  const base = addr.toByteArray().reduce((n, b) => n * 256 + b, 0);
  const size = 2 ** (32 - bits);
  const network = base - (base % size);
  const toText = (n: number) => [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join(".");
  for (let attempt = 0; attempt < 64 && size > 2; attempt++) {
    const ip = toText(network + 1 + Math.floor(Math.random() * (size - 2)));
    if (!taken.has(ip)) return ip;
  }
  return undefined;
}

function allocateClusterIP(spec: Json, others: readonly Json[], range?: string): void {
  if (typeof spec.clusterIP === "string" && spec.clusterIP !== "") {
    spec.clusterIPs ??= [spec.clusterIP];
    return;
  }
  const v4 = range
    ?.split(",")
    .map((c) => c.trim())
    .find((c) => ipaddr.isValidCIDR(c) && ipaddr.parseCIDR(c)[0].kind() === "ipv4");
  if (!v4) return;
  const taken = new Set(others.map((s) => str((s.spec as Json | undefined)?.clusterIP)));
  const ip = randomIPv4(v4, taken);
  if (!ip) return;
  spec.clusterIP = ip;
  spec.clusterIPs = [ip];
}

/**
 * Fills in `svc`'s clusterIP and nodePorts, as kube-apiserver's Service storage does on create and
 * update; `others` are the other stored Services, `prev` the stored version on update. Throws the
 * 422 Invalid kube-apiserver answers for a nodePort out of the range or already taken.
 */
export function allocateService(
  svc: Json,
  others: readonly Json[],
  ranges: ServiceRanges,
  prev?: Json,
): void {
  const spec = (svc.spec ??= {}) as Json;
  spec.type ??= "ClusterIP";
  const prevSpec = (prev?.spec ?? {}) as Json;
  if (prev && (spec.clusterIP === undefined || spec.clusterIP === "")) {
    if (prevSpec.clusterIP !== undefined) spec.clusterIP = prevSpec.clusterIP;
    if (prevSpec.clusterIPs !== undefined) spec.clusterIPs = prevSpec.clusterIPs;
  }
  allocateClusterIP(spec, others, ranges.clusterIPRange);
  if (!usesNodePorts(spec.type)) return;
  spec.externalTrafficPolicy ??= "Cluster";
  const range = ranges.nodePortRange ?? DEFAULT_NODE_PORT_RANGE;
  const taken = takenPorts(others);
  const before = portsOf(prev ?? {});
  const ports = portsOf(svc);
  const name = str((svc.metadata as Json | undefined)?.name);
  ports.forEach((p, i) => {
    // patchAllocatedValues maps the old node ports by port name.
    const kept = before.find((b) => (b.name ?? "") === (p.name ?? ""));
    if (!p.nodePort && kept?.nodePort) p.nodePort = kept.nodePort;
    const refuse = (value: number, detail: string) =>
      invalid("", "Service", name, [
        fieldError.invalid(`spec.ports[${i}].nodePort`, value, detail),
      ]);
    if (!p.nodePort) {
      const port = randomFreePort(range, taken);
      // ErrFull: every port of the range is held.
      if (port === undefined) throw refuse(0, "range is full");
      p.nodePort = port;
    } else if (p.nodePort < range.base || p.nodePort >= range.base + range.size) {
      throw refuse(
        p.nodePort,
        `provided port is not in the valid range. The range of valid ports is ${rangeText(range)}`,
      );
    } else if (taken.has(p.nodePort)) {
      throw refuse(p.nodePort, "provided port is already allocated");
    }
    taken.add(p.nodePort);
  });
}
