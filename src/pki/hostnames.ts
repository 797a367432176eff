import { parseIP, splitHostPort } from "../config/network.js";

// Name checks of k8s.io/apimachinery/pkg/util/validation and kubeadm's ParseHostPort
// (kubeadm: util/endpoint.go), used for SANs and endpoints.

const DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN = new RegExp(`^${DNS1123_LABEL}(\\.${DNS1123_LABEL})*$`);

/** validation.IsDNS1123Subdomain: lower-case RFC 1123 labels joined by dots, at most 253 chars. */
export function isDNS1123Subdomain(name: string): boolean {
  return name.length <= 253 && DNS1123_SUBDOMAIN.test(name);
}

/** validation.IsWildcardDNS1123Subdomain: "*." followed by a DNS-1123 subdomain. */
export function isWildcardDNS1123Subdomain(name: string): boolean {
  return name.length <= 253 && name.startsWith("*.") && DNS1123_SUBDOMAIN.test(name.slice(2));
}

/**
 * kubeadm's ParseHostPort: "host", "host:port", "[v6]:port" or a bare IPv6; the host must be
 * an IP or a DNS-1123 subdomain. Throws a sentence naming `field` otherwise.
 */
export function parseHostPort(
  text: string,
  field: string,
): { host: string; port: number | undefined } {
  const split = splitHostPort(text);
  if (!split) {
    throw new Error(
      `${field} "${text}" is not a valid address: expected host, host:port or [IPv6]:port with a port between 1 and 65535`,
    );
  }
  if (!parseIP(split.host) && !isDNS1123Subdomain(split.host)) {
    throw new Error(
      `${field} "${text}": host "${split.host}" must be a valid IP address or a valid RFC-1123 DNS subdomain`,
    );
  }
  return split;
}
