// Which proxy Go would use for a URL, given proxy environment variables: the rules of
// golang.org/x/net/http/httpproxy (FromEnvironment, ProxyFunc, useProxy, the NO_PROXY matchers)
// wrapped by apimachinery's NewProxierWithNoProxyCIDR, as kubeadm's HTTPProxyCheck and
// HTTPProxyCIDRCheck use them through netutil.SetOldTransportDefaults.
import type ipaddr from "ipaddr.js";
import { goSplitHostPort, parseCIDR, parseIP } from "../../config/network.js";

export type ProxyEnv = Readonly<Record<string, string>>;

/** httpproxy's getEnvAny: the upper-case name wins when set and not empty. */
function envAny(env: ProxyEnv, ...names: string[]): string {
  for (const n of names) {
    const v = env[n];
    if (v !== undefined && v !== "") return v;
  }
  return "";
}

/** httpproxy's parseProxy: a value without "scheme://host" is read as "http://<value>". */
function parseProxy(value: string): string | undefined {
  if (value === "") return undefined;
  return /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^/]/.test(value) ? value : `http://${value}`;
}

/** The proxy URL as printed, with a password replaced (as Go's URL.Redacted does). */
export function redactProxy(url: string): string {
  return url.replace(/^([a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^:@/]*):[^@/]*@/, "$1:xxxxx@");
}

interface Matcher {
  match(host: string, port: string, ip: ipaddr.IPv4 | ipaddr.IPv6 | undefined): boolean;
}

function sameIP(a: ipaddr.IPv4 | ipaddr.IPv6, b: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  return a.kind() === b.kind() && a.toString() === b.toString();
}

function inCIDR(ip: ipaddr.IPv4 | ipaddr.IPv6, cidrText: string): boolean {
  const cidr = parseCIDR(cidrText);
  if (!cidr) return false;
  const net = parseIP(cidr.network);
  if (!net || net.kind() !== ip.kind()) return false;
  // Same family on both sides, so the IPv4 signature stands for either.
  return (ip as ipaddr.IPv4).match(net, cidr.prefix);
}

function noProxyMatchers(noProxy: string): { ip: Matcher[]; domain: Matcher[]; cidrs: string[] } {
  const ip: Matcher[] = [];
  const domain: Matcher[] = [];
  const cidrs: string[] = [];
  for (const raw of noProxy.split(",")) {
    const p = raw.trim().toLowerCase();
    if (p === "") continue;
    if (p === "*") {
      const all: Matcher = { match: () => true };
      return { ip: [all], domain: [all], cidrs };
    }
    if (parseCIDR(p)) {
      cidrs.push(p);
      ip.push({ match: (_h, _p, addr) => addr !== undefined && inCIDR(addr, p) });
      continue;
    }
    let host = p;
    let port = "";
    const hp = goSplitHostPort(p);
    if (hp) {
      if (hp.host === "") continue; // no host part: malformed, ignored as Go does
      host = hp.host;
      port = hp.port;
    }
    const entryIP = parseIP(host);
    if (entryIP) {
      ip.push({
        match: (_h, reqPort, addr) =>
          addr !== undefined && sameIP(addr, entryIP) && (port === "" || port === reqPort),
      });
      continue;
    }
    // "foo.com" matches foo.com and its subdomains; ".foo.com" and "*.foo.com" only subdomains.
    if (host.startsWith("*.")) host = host.slice(1);
    const matchHost = !host.startsWith(".");
    if (matchHost) host = `.${host}`;
    const suffix = host;
    domain.push({
      match: (reqHost, reqPort) =>
        (reqHost.endsWith(suffix) || (matchHost && reqHost === suffix.slice(1))) &&
        (port === "" || port === reqPort),
    });
  }
  return { ip, domain, cidrs };
}

/**
 * The proxy Go picks for an "https" or "http" URL to `host` (an IP or name) on `port`
 * (the scheme's default when empty), or undefined for a direct connection.
 */
export function proxyFor(
  env: ProxyEnv,
  scheme: "https" | "http",
  host: string,
  port = "",
): string | undefined {
  const noProxy = envAny(env, "NO_PROXY", "no_proxy");
  const matchers = noProxyMatchers(noProxy);
  const ip = parseIP(host);
  // apimachinery's NewProxierWithNoProxyCIDR: an IP inside a NO_PROXY CIDR goes direct.
  if (ip && matchers.cidrs.some((c) => inCIDR(ip, c))) return undefined;

  const proxy = parseProxy(
    scheme === "https"
      ? envAny(env, "HTTPS_PROXY", "https_proxy")
      : envAny(env, "HTTP_PROXY", "http_proxy"),
  );
  if (proxy === undefined) return undefined;
  const reqPort = port !== "" ? port : scheme === "https" ? "443" : "80";
  const name = host.toLowerCase();
  if (name === "localhost" || ip?.range() === "loopback") return undefined;
  if (ip && matchers.ip.some((m) => m.match(name, reqPort, ip))) return undefined;
  if (matchers.domain.some((m) => m.match(name, reqPort, ip))) return undefined;
  return proxy;
}
