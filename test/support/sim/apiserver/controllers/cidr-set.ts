// SIMULATION (test double). The node IPAM range allocator's set of per-node CIDRs carved out of
// one cluster CIDR: a bitmap of used blocks, next-fit allocation (the search starts after the
// last block handed out and wraps around), Occupy/Release of any CIDR overlapping the range.
// k8s: pkg/controller/nodeipam/ipam/cidrset/cidr_set.go (NewCIDRSet: an IPv6 node mask at most
// 16 bits longer than the cluster mask; AllocateNext; Occupy; Release; getBeginningAndEndIndices;
// ErrCIDRRangeNoCIDRsRemaining).
import ipaddr from "ipaddr.js";

/** k8s: cidr_set.go ErrCIDRRangeNoCIDRsRemaining */
export const NO_CIDRS_REMAINING =
  "CIDR allocation failed; there are no remaining CIDRs left to allocate in the accepted range";

interface ParsedCIDR {
  /** The network address as an integer (host bits cleared). */
  base: bigint;
  prefix: number;
  bits: 32 | 128;
}

function toBigInt(ip: ipaddr.IPv4 | ipaddr.IPv6): bigint {
  let v = 0n;
  for (const b of ip.toByteArray()) v = (v << 8n) | BigInt(b);
  return v;
}

function hostMask(prefix: number, bits: number): bigint {
  return (1n << BigInt(bits - prefix)) - 1n;
}

/** Go's net.ParseCIDR: the address with the host bits cleared, and the prefix length. */
export function parseCIDR(text: string): ParsedCIDR {
  let parsed: [ipaddr.IPv4 | ipaddr.IPv6, number];
  try {
    parsed = ipaddr.parseCIDR(text.trim());
  } catch {
    throw new Error(`invalid CIDR address: ${text}`);
  }
  const [ip, prefix] = parsed;
  const bits = ip.kind() === "ipv4" ? 32 : 128;
  return { base: toBigInt(ip) & ~hostMask(prefix, bits), prefix, bits };
}

/** Go's IPNet.String(): dotted IPv4 or RFC 5952 IPv6, then "/prefix". */
export function formatCIDR(base: bigint, prefix: number, bits: 32 | 128): string {
  const bytes: number[] = [];
  for (let i = bits / 8 - 1; i >= 0; i--) bytes.push(Number((base >> BigInt(i * 8)) & 0xffn));
  return `${ipaddr.fromByteArray(bytes).toString()}/${prefix}`;
}

export class CidrSet {
  private readonly cluster: ParsedCIDR;
  private readonly used = new Set<number>();
  private nextCandidate = 0;
  readonly maxCIDRs: number;

  constructor(
    readonly clusterCIDR: string,
    readonly nodeMaskSize: number,
  ) {
    this.cluster = parseCIDR(clusterCIDR);
    const { prefix, bits } = this.cluster;
    if (!Number.isInteger(nodeMaskSize) || nodeMaskSize < prefix || nodeMaskSize > bits) {
      // k8s: nodeipam/node_ipam_controller.go NewNodeIpamController
      throw new Error(
        `Controller: Invalid --cluster-cidr, mask size of cluster CIDR must be less than or equal to --node-cidr-mask-size configured for CIDR family (${clusterCIDR}, /${nodeMaskSize})`,
      );
    }
    // k8s: cidr_set.go NewCIDRSet — clusterSubnetMaxDiff, checked for IPv6 only.
    if (bits === 128 && nodeMaskSize - prefix > 16) {
      throw new Error("New CIDR set failed; the node CIDR size is too big");
    }
    this.maxCIDRs = 2 ** (nodeMaskSize - prefix);
  }

  get allocated(): number {
    return this.used.size;
  }

  /** The index-th node block. k8s: cidr_set.go indexToCIDRBlock */
  cidrAt(index: number): string {
    const { base, bits } = this.cluster;
    const shift = BigInt(bits - this.nodeMaskSize);
    return formatCIDR(base | (BigInt(index) << shift), this.nodeMaskSize, bits);
  }

  /** k8s: cidr_set.go AllocateNext — next fit from the block after the last one handed out. */
  allocateNext(): string {
    if (this.used.size >= this.maxCIDRs) throw new Error(NO_CIDRS_REMAINING);
    let candidate = this.nextCandidate;
    for (let i = 0; i < this.maxCIDRs; i++) {
      if (!this.used.has(candidate)) break;
      candidate = (candidate + 1) % this.maxCIDRs;
    }
    this.nextCandidate = (candidate + 1) % this.maxCIDRs;
    this.used.add(candidate);
    return this.cidrAt(candidate);
  }

  /** Marks every node block overlapping `cidr` as used (a service range may span many). */
  occupy(cidr: string): void {
    const [begin, end] = this.indices(cidr);
    for (let i = begin; i <= end; i++) this.used.add(i);
  }

  /** Frees every node block overlapping `cidr`. */
  release(cidr: string): void {
    const [begin, end] = this.indices(cidr);
    for (let i = begin; i <= end; i++) this.used.delete(i);
  }

  /** Forgets every allocation but keeps the next-fit position (a re-list rebuilds the bitmap). */
  clear(): void {
    this.used.clear();
  }

  isUsed(cidr: string): boolean {
    const [begin, end] = this.indices(cidr);
    for (let i = begin; i <= end; i++) if (this.used.has(i)) return true;
    return false;
  }

  /** k8s: cidr_set.go getBeginningAndEndIndices */
  private indices(text: string): [number, number] {
    const c = parseCIDR(text);
    const { base, prefix, bits } = this.cluster;
    if (c.bits !== bits)
      throw new Error(`cidr ${text} is out the range of cluster cidr ${this.clusterCIDR}`);
    const outer = Math.min(prefix, c.prefix);
    const outerMask = ~hostMask(outer, bits);
    if ((c.base & outerMask) !== (base & outerMask)) {
      throw new Error(`cidr ${text} is out the range of cluster cidr ${this.clusterCIDR}`);
    }
    if (c.prefix <= prefix) return [0, this.maxCIDRs - 1];
    const shift = BigInt(bits - this.nodeMaskSize);
    const indexOf = (ip: bigint) => Number(((ip ^ base) >> shift) & BigInt(this.maxCIDRs - 1));
    const last = c.base | hostMask(c.prefix, bits);
    return [indexOf(c.base), indexOf(last)];
  }
}
