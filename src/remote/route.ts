import { connect as tcpConnect } from "node:net";
import type { IPv6 } from "ipaddr.js";
import { checkServerIdentity, type ConnectionOptions } from "node:tls";
import { isIP, parseIP } from "../config/network.js";
import type { Forward, Host } from "./host.js";

// How the runner opens a TCP connection on behalf of a node: "as the node sees it". kubeforge
// runs every node's kubeadm workflow in its own process, so API requests, discovery, the TLS
// bootstrap, etcd calls and health probes leave from the runner; a node's addresses (its API
// server, etcd, its own 127.0.0.1) are the node's view. A Route turns such a target into an
// address the runner can connect to: the target itself when the runner reaches it, else a local
// port forwarded over the node's SSH connection (Host.forward, direct-tcpip), which connects
// from the node. TLS is still verified against the original name (verifyServerAs).

/** An address the runner connects to. */
export interface RoutedAddress {
  host: string;
  port: number;
}

/** Where to connect to reach `host:port` as a node sees it. */
export type Route = (host: string, port: number) => Promise<RoutedAddress>;

/** A Route owning forwards: close() ends them (the host's close() ends them too). */
export interface NodeRoute extends Route {
  /** Ends the forwards this route opened. The route stays usable (it opens new ones). */
  close(): Promise<void>;
}

/** Connects directly: the runner is the node (LocalHost) or reaches everything. */
export const directRoute: Route = (host, port) => Promise.resolve({ host, port });

/** Whether the runner can open a TCP connection to host:port within timeoutMs. */
export type ReachabilityProbe = (host: string, port: number, timeoutMs: number) => Promise<boolean>;

export interface RouteOptions {
  /** Decides "direct or forwarded"; default canConnect. Tests force forwarding with `async () => false`. */
  probe?: ReachabilityProbe;
  /** Bound on one probe (a firewall that drops packets answers nothing). Default 1.5 s. */
  probeTimeoutMs?: number;
  /**
   * A probe that failed fast (refused: nothing listening yet, or a firewall's reject) is asked
   * again after this long, so a server started later is reached directly. Default 10 s.
   */
  reprobeAfterMs?: number;
  /** Notes which targets go through the node (one line per target). */
  log?: (line: string) => void;
  /** For tests: the clock reprobeAfterMs is measured with. */
  now?: () => number;
}

const DEFAULT_PROBE_TIMEOUT_MS = 1_500;
const DEFAULT_REPROBE_AFTER_MS = 10_000;

/** One TCP connect, closed at once: true when it was accepted. */
export const canConnect: ReachabilityProbe = (host, port, timeoutMs) =>
  new Promise((resolve) => {
    const socket = tcpConnect({ host, port });
    const done = (ok: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });

/** 127.0.0.0/8, ::1 and "localhost": the node's own loopback, never the runner's. */
export function isLoopback(host: string): boolean {
  if (host.toLowerCase() === "localhost") return true;
  const ip = parseIP(host);
  if (!ip) return false;
  if (ip.kind() === "ipv6") {
    const v6 = ip as IPv6;
    if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().range() === "loopback";
  }
  return ip.range() === "loopback";
}

const bare = (host: string) => host.replace(/^\[|\]$/g, "");

interface Decision {
  direct: boolean;
  /** When a failed probe may be asked again (refused fast); undefined: final. */
  retryAt?: number;
}

/**
 * The route of `node`: a node without `forward` (LocalHost, the runner itself) connects
 * directly; on a forwarding host (SSH) a loopback target is always forwarded, any other target
 * is probed once (cached for the route's life) and forwarded when the runner cannot connect.
 * Forwards are opened once per target and kept until close() or the host's close().
 * Without options, every caller gets the host's shared route (one probe and one forward per
 * target for all of a node's clients).
 */
export function routeThrough(node: Host, opts?: RouteOptions): NodeRoute {
  if (opts === undefined) {
    let shared = sharedRoutes.get(node);
    if (!shared) {
      shared = makeRoute(node, {});
      sharedRoutes.set(node, shared);
    }
    return shared;
  }
  return makeRoute(node, opts);
}

const sharedRoutes = new WeakMap<Host, NodeRoute>();

function makeRoute(node: Host, opts: RouteOptions): NodeRoute {
  const forwardOnNode = node.forward?.bind(node);
  if (!forwardOnNode) {
    return Object.assign((host: string, port: number) => directRoute(bare(host), port), {
      close: () => Promise.resolve(),
    });
  }
  const probe = opts.probe ?? canConnect;
  const probeTimeoutMs = opts.probeTimeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS;
  const reprobeAfterMs = opts.reprobeAfterMs ?? DEFAULT_REPROBE_AFTER_MS;
  const now = opts.now ?? Date.now;
  const decisions = new Map<string, Promise<Decision>>();
  const forwards = new Map<string, Promise<Forward>>();

  const decide = (host: string, port: number, key: string): Promise<Decision> => {
    const cached = decisions.get(key);
    if (cached) {
      return cached.then((d) => (d.retryAt !== undefined && now() >= d.retryAt ? fresh() : d));
    }
    return fresh();

    function fresh(): Promise<Decision> {
      const started = now();
      const decision = probe(host, port, probeTimeoutMs).then(
        (ok): Decision => {
          if (ok) return { direct: true };
          // Slow failures (no answer: a dropping firewall) are final; fast ones are asked again.
          const fast = now() - started < probeTimeoutMs;
          return fast ? { direct: false, retryAt: now() + reprobeAfterMs } : { direct: false };
        },
        (): Decision => ({ direct: false }),
      );
      decisions.set(key, decision);
      return decision;
    }
  };

  const forwardTo = (host: string, port: number, key: string): Promise<Forward> => {
    let f = forwards.get(key);
    if (!f) {
      f = forwardOnNode(host, port);
      // A failed forward is not kept: the next attempt of a retry loop tries again.
      f.catch(() => {
        if (forwards.get(key) === f) forwards.delete(key);
      });
      forwards.set(key, f);
      if (opts.log) {
        const log = opts.log;
        f.then(
          () => log(`[route] ${node.name}: ${key} is reached through the node's SSH connection`),
          () => {},
        );
      }
    }
    return f;
  };

  const route = async (target: string, port: number): Promise<RoutedAddress> => {
    const host = bare(target);
    const key = isIP(host) && host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
    if (!isLoopback(host) && (await decide(host, port, key)).direct) return { host, port };
    const f = await forwardTo(host, port, key);
    return { host: "127.0.0.1", port: f.port };
  };

  const close = async () => {
    const open = [...forwards.values()];
    forwards.clear();
    await Promise.allSettled(open.map(async (f) => (await f).close()));
  };
  return Object.assign(route, { close });
}

/**
 * TLS options that verify a routed connection against the name it was meant for: a DNS name
 * as SNI (Node checks the certificate against `servername`), an IP through checkServerIdentity
 * (an IP is not allowed as SNI, RFC 6066 §3). Empty when the connection is not rerouted.
 */
export function verifyServerAs(
  original: string,
  routed: string,
): Pick<ConnectionOptions, "servername" | "checkServerIdentity"> {
  const name = bare(original);
  if (name === bare(routed)) return {};
  if (isIP(name)) return { checkServerIdentity: (_host, cert) => checkServerIdentity(name, cert) };
  return { servername: name };
}

/** A URL's target host (without brackets) and port (the scheme's default when absent). */
export function urlTarget(url: URL): RoutedAddress {
  const port = url.port ? Number(url.port) : url.protocol === "http:" ? 80 : 443;
  return { host: bare(url.hostname), port };
}

/** `url` pointed at the routed address of its target; `original` is the target's host. */
export async function routeURL(
  route: Route,
  url: string,
): Promise<{ url: string; original: string; routed: string }> {
  const target = new URL(url);
  const { host: original, port } = urlTarget(target);
  const to = await route(original, port);
  if (to.host === original && to.port === port) return { url, original, routed: original };
  target.hostname = to.host.includes(":") ? `[${to.host}]` : to.host;
  target.port = String(to.port);
  let text = target.toString();
  // URL adds "/" to a bare origin: keep the caller's form ("https://10.0.0.1:6443").
  if (!url.endsWith("/") && target.pathname === "/" && !target.search && !target.hash) {
    text = text.slice(0, -1);
  }
  return { url: text, original, routed: to.host };
}
