import ipaddr from "ipaddr.js";
import { isDNS1123Subdomain } from "./names.js";

// IP and CIDR arithmetic as kubeadm does it (k8s.io/utils/net and kubeadm's util/endpoint.go).

export type IPFamily = 4 | 6;

export interface CIDR {
  /** The network address (host bits cleared). */
  network: string;
  prefix: number;
  family: IPFamily;
  /** The CIDR as given. */
  text: string;
}

/** Strict IP parsing: dotted quads for IPv4 ("10" or "010.1.1.1" are refused). Zones are refused. */
export function parseIP(text: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return ipaddr.IPv4.parse(text);
  if (text.includes(":") && !text.includes("%") && ipaddr.IPv6.isValid(text)) {
    const ip = ipaddr.IPv6.parse(text);
    // Go's net.ParseIP keeps IPv4-mapped addresses (::ffff:0:0/96) as IPv4. Read from the parts:
    // ipaddr's isIPv4MappedAddress matches every special range first, about a third of the CPU
    // a bench round's profile showed reading certificates (their IP SANs).
    return isIPv4Mapped(ip) ? ip.toIPv4Address() : ip;
  }
  return undefined;
}

function isIPv4Mapped(ip: ipaddr.IPv6): boolean {
  const p = ip.parts;
  return p[0] === 0 && p[1] === 0 && p[2] === 0 && p[3] === 0 && p[4] === 0 && p[5] === 0xffff;
}

export function isIP(text: string): boolean {
  return parseIP(text) !== undefined;
}

export function ipFamily(text: string): IPFamily | undefined {
  const ip = parseIP(text);
  return ip === undefined ? undefined : ip.kind() === "ipv6" ? 6 : 4;
}

/** Canonical text of an IP (IPv6 compressed, as Go prints it). */
export function formatIP(text: string): string {
  const ip = parseIP(text);
  if (!ip) throw new Error(`"${text}" is not an IP address`);
  return ip.toString();
}

function toBigInt(ip: ipaddr.IPv4 | ipaddr.IPv6): bigint {
  return ip.toByteArray().reduce((acc, b) => (acc << 8n) | BigInt(b), 0n);
}

function fromBigInt(value: bigint, family: IPFamily): string {
  const length = family === 4 ? 4 : 16;
  const bytes: number[] = [];
  for (let i = 0; i < length; i++) bytes.unshift(Number((value >> BigInt(8 * i)) & 0xffn));
  return ipaddr.fromByteArray(bytes).toString();
}

export function parseCIDR(text: string): CIDR | undefined {
  const slash = text.indexOf("/");
  if (slash < 0) return undefined;
  const ip = parseIP(text.slice(0, slash));
  const prefixText = text.slice(slash + 1);
  if (!ip || !/^\d{1,3}$/.test(prefixText)) return undefined;
  const family: IPFamily = ip.kind() === "ipv6" ? 6 : 4;
  const prefix = Number(prefixText);
  const bits = family === 4 ? 32 : 128;
  if (prefix > bits) return undefined;
  const mask = ((1n << BigInt(bits)) - 1n) ^ ((1n << BigInt(bits - prefix)) - 1n);
  return { network: fromBigInt(toBigInt(ip) & mask, family), prefix, family, text };
}

/** Splits a comma-separated CIDR list ("10.244.0.0/16,fd00::/56"), trimming blanks. */
export function splitCIDRs(text: string): string[] {
  return text
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** The index-th address of a CIDR: kubeadm's GetIndexedIP (10.96.0.0/12, 10 → 10.96.0.10). */
export function indexedIP(cidrText: string, index: number): string {
  const cidr = parseCIDR(cidrText);
  if (!cidr) throw new Error(`"${cidrText}" is not a CIDR`);
  const size = 1n << BigInt((cidr.family === 4 ? 32 : 128) - cidr.prefix);
  if (BigInt(index) >= size) {
    throw new Error(`the CIDR ${cidrText} has no address with index ${index}`);
  }
  return fromBigInt(toBigInt(parseIP(cidr.network)!) + BigInt(index), cidr.family);
}

/** True when two CIDRs share at least one address. */
export function cidrsOverlap(a: string, b: string): boolean {
  const x = parseCIDR(a);
  const y = parseCIDR(b);
  if (!x || !y || x.family !== y.family) return false;
  const shortest = Math.min(x.prefix, y.prefix);
  const bits = x.family === 4 ? 32 : 128;
  const shift = BigInt(bits - shortest);
  return toBigInt(parseIP(x.network)!) >> shift === toBigInt(parseIP(y.network)!) >> shift;
}

/** "host:port" with IPv6 literals bracketed ("[fd00::1]:6443"). */
export function joinHostPort(host: string, port: number | string): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

/** The loopback address of the same family: "::1" for IPv6, else "127.0.0.1". */
export function loopbackFor(address: string): string {
  return ipFamily(address) === 6 ? "::1" : "127.0.0.1";
}

/**
 * Go's net.SplitHostPort: "host:port" or "[host]:port", the port possibly empty but its colon
 * required; brackets only around the host, and no other colon in an unbracketed host.
 */
export function goSplitHostPort(text: string): { host: string; port: string } | undefined {
  const m = /^\[([^[\]]*)\]:([^:[\]]*)$/.exec(text) ?? /^([^:[\]]*):([^:[\]]*)$/.exec(text);
  return m ? { host: m[1]!, port: m[2]! } : undefined;
}

export type HostPort = { host: string; port: number | undefined };

/**
 * kubeadm's ParseHostPort (util/endpoint.go): "host", "host:port", "[v6]:port" or a bare IPv6
 * (text Go's SplitHostPort refuses is all host, so "[v6]" alone is not valid). The port, when
 * given, must be 1-65535; the host an IP or a DNS-1123 subdomain. Returns the problem as one
 * phrase ("port 0 must be ...") when the text is not valid.
 */
export function parseHostPort(text: string): HostPort | { problem: string } {
  const split = goSplitHostPort(text) ?? { host: text, port: "" };
  let port: number | undefined;
  if (split.port !== "") {
    port = /^[0-9]+$/.test(split.port) ? Number(split.port) : NaN;
    if (!(port >= 1 && port <= 65535)) {
      return { problem: `port ${split.port} must be a number between 1 and 65535` };
    }
  }
  if (!parseIP(split.host) && !isDNS1123Subdomain(split.host)) {
    return {
      problem: `host "${split.host}" must be a valid IP address or a valid RFC-1123 DNS subdomain`,
    };
  }
  return { host: split.host, port };
}

/** parseHostPort for a value already validated: throws one sentence naming `field` if not. */
export function hostPortOf(text: string, field: string): HostPort {
  const parsed = parseHostPort(text);
  if ("problem" in parsed) {
    throw new Error(`${field} "${text}" is not a valid address: ${parsed.problem}`);
  }
  return parsed;
}
