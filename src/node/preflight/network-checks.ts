// Network checks: kubeadm's PortOpenCheck, HostnameCheck, HTTPProxyCheck and HTTPProxyCIDRCheck
// (preflight/checks.go, kubernetes/kubernetes@00b6a4c7 ≈ v1.35).
import { isQualifiedName } from "../../config/names.js";
import { indexedIP, isIP, joinHostPort, parseCIDR } from "../../config/network.js";
import type { Host } from "../../remote/host.js";
import { type Check, fail, makeCheck, pass, warn } from "./checks.js";
import { type ProxyEnv, proxyFor, redactProxy } from "./proxy.js";

/** The port of an "address:port" column of `ss` ("0.0.0.0:22", "[::]:22", "*:22", "127.0.0.53%lo:53"). */
function portOf(address: string): number | undefined {
  const colon = address.lastIndexOf(":");
  const port = Number(address.slice(colon + 1));
  return colon >= 0 && Number.isInteger(port) ? port : undefined;
}

/** Listening TCP ports from /proc/net/tcp{,6} (state 0A), for hosts without `ss`. */
async function listeningFromProc(host: Host): Promise<Set<number>> {
  const ports = new Set<number>();
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text: string;
    try {
      text = (await host.readFile(file)).toString();
    } catch {
      continue; // no IPv6 on this kernel
    }
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      const local = fields[1];
      if (fields[3] === "0A" && local !== undefined)
        ports.add(parseInt(local.split(":")[1] ?? "", 16));
    }
  }
  return ports;
}

/**
 * TCP ports something listens on, in the host's network namespace. kubeadm tries to bind
 * ":port"; that fails exactly when a socket listens on the port on any address, which is what
 * `ss -Hltn` lists — and `ss` works the same over SSH.
 */
export async function listeningTCPPorts(host: Host): Promise<Set<number>> {
  const r = await host.exec(["ss", "-Hltn"], { readOnly: true, timeoutMs: 30_000 });
  if (r.code !== 0) return listeningFromProc(host);
  const ports = new Set<number>();
  for (const line of r.stdout.split("\n")) {
    // State Recv-Q Send-Q Local-Address:Port Peer-Address:Port [Process]
    const local = line.trim().split(/\s+/)[3];
    const port = local === undefined ? undefined : portOf(local);
    if (port !== undefined) ports.add(port);
  }
  return ports;
}

/** Error when something already listens on the port ("Port-<n>"). */
export function portOpenCheck(host: Host, port: number, label?: string): Check {
  return makeCheck(label ?? `Port-${port}`, async () =>
    (await listeningTCPPorts(host)).has(port) ? fail(`Port ${port} is in use`) : pass(),
  );
}

/**
 * Whether the host resolves `name` (Go's net.LookupHost, asked on the host itself through
 * getaddrinfo as `getent ahosts`). Returns the resolver's complaint when it does not.
 */
async function lookupHost(host: Host, name: string): Promise<string | undefined> {
  const r = await host.exec(["getent", "ahosts", "--", name], {
    readOnly: true,
    timeoutMs: 30_000,
  });
  if (r.code === 0 && r.stdout.trim() !== "") return undefined;
  if (r.code === 127) return `lookup ${name}: getent is not available on the host`;
  return `lookup ${name}: no such host`;
}

/**
 * Warnings when the node name is not a qualified name (the kubelet would not start static pods
 * for it) or does not resolve. kubeadm words a failed lookup twice: "could not be reached" and
 * the resolver's error; the latter's text here is getent's verdict, not Go's resolver message.
 */
export function hostnameCheck(host: Host, nodeName: string): Check {
  return makeCheck("Hostname", async () => {
    const warnings = isQualifiedName(nodeName).map(
      (m) => `invalid node name format ${JSON.stringify(nodeName)}: ${m}`,
    );
    const lookupError = await lookupHost(host, nodeName);
    if (lookupError !== undefined) {
      warnings.push(`hostname "${nodeName}" could not be reached`);
      warnings.push(`hostname "${nodeName}": ${lookupError}`);
    }
    return warn(...warnings);
  });
}

/**
 * Warning when an HTTPS connection to `hostAddress` would go through a proxy ("HTTPProxy").
 * kubeadm builds the URL https://<host> (an IPv6 host gets the dummy port 1234).
 */
export function httpProxyCheck(proxyEnv: ProxyEnv, hostAddress: string): Check {
  return makeCheck("HTTPProxy", () => {
    const ipv6 = isIP(hostAddress) && hostAddress.includes(":");
    const url = `https://${ipv6 ? joinHostPort(hostAddress, 1234) : hostAddress}`;
    const proxy = proxyFor(proxyEnv, "https", hostAddress, ipv6 ? "1234" : "");
    return Promise.resolve(
      proxy === undefined
        ? pass()
        : warn(
            `Connection to "${url}" uses proxy "${redactProxy(proxy)}". If that is not intended, adjust your proxy settings`,
          ),
    );
  });
}

/**
 * Warning when HTTPS to the first address of a Service or Pod CIDR would go through a proxy
 * ("HTTPProxyCIDR"); the apiserver would then reach Services and Pods through the proxy.
 * An empty CIDR (no pod subnet) is skipped, as in kubeadm.
 */
export function httpProxyCIDRCheck(proxyEnv: ProxyEnv, cidr: string): Check {
  return makeCheck("HTTPProxyCIDR", () => {
    if (cidr.length === 0) return Promise.resolve(pass());
    if (!parseCIDR(cidr)) {
      return Promise.resolve(fail(`error parsing CIDR "${cidr}": invalid CIDR address: ${cidr}`));
    }
    const testIP = indexedIP(cidr, 1);
    const proxy = proxyFor(proxyEnv, "https", testIP, "1234");
    return Promise.resolve(
      proxy === undefined
        ? pass()
        : warn(
            `connection to "${cidr}" uses proxy "${redactProxy(proxy)}". This may lead to malfunctional cluster setup. ` +
              "Make sure that Pod and Services IP ranges specified correctly as exceptions in proxy configuration",
          ),
    );
  });
}
