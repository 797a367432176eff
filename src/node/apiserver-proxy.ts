import { pause } from "../remote/interruption.js";
import { ipFamily, joinHostPort } from "../config/network.js";
import { CommandError, readFileIfExists, type Host } from "../remote/host.js";
import { getInitSystem } from "./init-system.js";
import { installPackages } from "./runtime/packages.js";
import { lookPath } from "./lookpath.js";

// kubeforge's own stable API endpoint for clusters with several control planes and no load
// balancer of the user's: a node-local TCP proxy to every API server on every node, as
// kubespray's "localhost load balancing" (nginx/haproxy in front of all kube-apiservers) and
// k0s's node-local load balancing do. It is HAProxy from the distribution's packages, run as a
// systemd unit — no image to pull. The kubelets of workers and kube-proxy everywhere talk to
// it, so they keep working while any one control plane is down.

/** Where the proxy listens on every node (k0s's node-local load balancer uses the same port). */
export const APISERVER_PROXY_PORT = 7443;
export const APISERVER_PROXY_UNIT = "kubeforge-apiserver-proxy";
export const APISERVER_PROXY_CONFIG = "/etc/kubeforge/apiserver-proxy.cfg";
export const APISERVER_PROXY_UNIT_PATH = `/etc/systemd/system/${APISERVER_PROXY_UNIT}.service`;
/** HAProxy's runtime API: root's only (mode 600), where an upgrade takes a server out. */
export const APISERVER_PROXY_SOCKET = "/run/kubeforge-apiserver-proxy.sock";
const BACKEND = "kube-apiservers";

export interface ApiServerBackend {
  name: string;
  address: string;
  port: number;
}

/** The loopback address the proxy binds: the control planes' family decides. */
export function proxyListenAddress(backends: readonly ApiServerBackend[]): string {
  return backends.every((b) => ipFamily(b.address) === 6) ? "::1" : "127.0.0.1";
}

/** https://<loopback>:7443, what node-local clients are pointed at. */
export function proxyServerURL(backends: readonly ApiServerBackend[]): string {
  return `https://${joinHostPort(proxyListenAddress(backends), APISERVER_PROXY_PORT)}`;
}

/** Whether a controlPlaneEndpoint is the node-local proxies' (what `up` sets without one of the user's). */
export function isProxyEndpoint(controlPlaneEndpoint: string | undefined): boolean {
  return (
    controlPlaneEndpoint === `127.0.0.1:${APISERVER_PROXY_PORT}` ||
    controlPlaneEndpoint === `[::1]:${APISERVER_PROXY_PORT}`
  );
}

// HAProxy reads an IPv6 address as "ipv6@addr:port": the last colon separates the port.
function haproxyAddress(address: string, port: number): string {
  return ipFamily(address) === 6 ? `ipv6@${address}:${port}` : `${address}:${port}`;
}

/**
 * HAProxy configuration: TCP mode (TLS passes through; clients verify the API servers' own
 * certificate), connection retries redispatched to another server, long client/server timeouts
 * because watches stay open for minutes. The health check asks each API server's `/readyz` over
 * TLS every second, as kubeadm's HA guide configures HAProxy (kubernetes/kubeadm
 * docs/ha-considerations.md, with /healthz): a TCP check alone keeps sending clients to an API
 * server that accepts connections but answers 500 while its local etcd restarts (an upgrade
 * does that on every control plane). A server marked down has its sessions closed, so clients
 * holding keep-alive connections to it reconnect to one that is ready.
 */
export function apiServerProxyConfig(backends: readonly ApiServerBackend[]): string {
  if (backends.length === 0) throw new Error("the API server proxy needs at least one backend");
  const listen = proxyListenAddress(backends);
  return [
    "# Managed by kubeforge: the node-local load balancer for the Kubernetes API servers.",
    "global",
    "  maxconn 4000",
    `  stats socket ${APISERVER_PROXY_SOCKET} mode 600 level admin`,
    "defaults",
    "  mode tcp",
    "  timeout connect 3s",
    "  timeout client 1h",
    "  timeout server 1h",
    "  timeout check 2s",
    "  retries 2",
    "  option redispatch",
    "frontend kube-apiserver",
    `  bind ${haproxyAddress(listen, APISERVER_PROXY_PORT)}`,
    `  default_backend ${BACKEND}`,
    `backend ${BACKEND}`,
    "  balance roundrobin",
    // /readyz is readable without credentials (RBAC system:public-info-viewer); the API
    // server's certificate is the client's to verify, not the health check's.
    "  option httpchk",
    "  http-check connect ssl",
    "  http-check send meth GET uri /readyz",
    "  http-check expect status 200",
    "  default-server inter 1s fall 2 rise 1 verify none on-marked-down shutdown-sessions",
    ...backends.map((b) => `  server ${b.name} ${haproxyAddress(b.address, b.port)} check`),
    "",
  ].join("\n");
}

/** The systemd unit; HAProxy in master-worker mode (-Ws) reports readiness to systemd. */
export function apiServerProxyUnit(haproxyPath: string): string {
  return [
    "[Unit]",
    "Description=kubeforge node-local load balancer for the Kubernetes API servers",
    "Wants=network-online.target",
    "After=network-online.target",
    "Before=kubelet.service",
    "",
    "[Service]",
    `ExecStart=${haproxyPath} -Ws -f ${APISERVER_PROXY_CONFIG}`,
    "ExecReload=/bin/kill -USR2 $MAINPID",
    "Restart=always",
    "RestartSec=2",
    "Type=notify",
    "",
    "[Install]",
    "WantedBy=multi-user.target",
    "",
  ].join("\n");
}

async function haproxyOn(host: Host, allowInstall: boolean): Promise<string> {
  // As root finds it: Debian gives login users no /usr/sbin, where HAProxy lives.
  const found = await lookPath(host, "haproxy");
  if (found) return found;
  if (allowInstall) {
    const { failed } = await installPackages(host, [{ "apt-get": "haproxy", dnf: "haproxy" }]);
    if (failed.length > 0) {
      throw new Error(
        `cannot install HAProxy for the API server proxy: ${failed.map((f) => f.error).join("; ")}`,
      );
    }
    const installed = await lookPath(host, "haproxy");
    if (installed) return installed;
  }
  throw new Error(
    "HAProxy is not installed and could not be installed (the node-local API server proxy for several control planes needs it); install the haproxy package or set controlPlaneEndpoint to your own load balancer",
  );
}

async function listening(host: Host, port: number): Promise<boolean> {
  const r = await host.exec(["ss", "-Hltn", `sport = :${port}`], {
    readOnly: true,
    timeoutMs: 10_000,
  });
  return r.code === 0 && r.stdout.trim().length > 0;
}

/**
 * Writes the proxy's configuration and unit, (re)starts it when either changed, and waits
 * until it listens. Returns whether anything changed.
 */
export async function installApiServerProxy(
  host: Host,
  backends: readonly ApiServerBackend[],
  opts: { allowInstall: boolean; log?: (line: string) => void; timeoutMs?: number },
): Promise<{ changed: boolean }> {
  const haproxy = await haproxyOn(host, opts.allowInstall);
  const config = apiServerProxyConfig(backends);
  // HAProxy checks a file (it cannot open a socket as /dev/stdin): a candidate next to the real
  // one, so a configuration HAProxy refuses never replaces a working one.
  const candidate = `${APISERVER_PROXY_CONFIG}.new`;
  await host.writeFile(candidate, config, 0o644);
  const check = await host.exec([haproxy, "-c", "-q", "-f", candidate], {
    sudo: true,
    timeoutMs: 30_000,
  });
  await host.remove(candidate);
  if (check.code !== 0) {
    throw new Error(
      `HAProxy refuses the API server proxy configuration: ${(check.stderr || check.stdout).trim()}`,
    );
  }
  const unit = apiServerProxyUnit(haproxy);
  const changed: string[] = [];
  for (const [path, content] of [
    [APISERVER_PROXY_CONFIG, config],
    [APISERVER_PROXY_UNIT_PATH, unit],
  ] as const) {
    const current = await readFileIfExists(host, path);
    if (current?.toString("utf8") === content) continue;
    await host.writeFile(path, content, 0o644);
    changed.push(path);
  }
  const init = await getInitSystem(host);
  if (init?.name !== "systemd") {
    throw new Error(
      "the node-local API server proxy runs as a systemd unit and this host has no systemd; set controlPlaneEndpoint to your own load balancer",
    );
  }
  const active = await init.serviceIsActive(APISERVER_PROXY_UNIT);
  if (changed.length > 0 || !active) {
    const enable = ["systemctl", "enable", APISERVER_PROXY_UNIT];
    const r = await host.exec(enable, { sudo: true, timeoutMs: 30_000 });
    if (r.code !== 0) {
      throw new Error(
        `cannot enable ${APISERVER_PROXY_UNIT}: ${new CommandError(host.name, enable, r).message}`,
      );
    }
    await init.serviceRestart(APISERVER_PROXY_UNIT);
    opts.log?.(
      `[apiserver-proxy] ${APISERVER_PROXY_UNIT} ${active ? "restarted" : "started"} on ${joinHostPort(proxyListenAddress(backends), APISERVER_PROXY_PORT)} for ${backends.map((b) => b.name).join(", ")}`,
    );
  }
  const end = Date.now() + (opts.timeoutMs ?? 30_000);
  while (!(await listening(host, APISERVER_PROXY_PORT))) {
    if (Date.now() > end) {
      throw new Error(
        `${APISERVER_PROXY_UNIT} does not listen on port ${APISERVER_PROXY_PORT}; see "journalctl -u ${APISERVER_PROXY_UNIT}"`,
      );
    }
    await pause(250);
  }
  return { changed: changed.length > 0 || !active };
}

/**
 * HAProxy runtime API commands (one line, `;`-separated) that put `back` into rotation and take
 * `out` out of it before its API server restarts: maintenance (no new connection goes to it)
 * and its sessions closed, so clients holding keep-alive connections or watches reconnect to
 * another API server now instead of failing when it stops. `ready` only lifts the
 * maintenance: the health check still decides whether a server gets traffic.
 */
export function proxyRotationCommands(change: { out?: string; back: readonly string[] }): string {
  const commands = change.back.map((s) => `set server ${BACKEND}/${s} state ready`);
  if (change.out !== undefined) {
    commands.push(
      `set server ${BACKEND}/${change.out} state maint`,
      `shutdown sessions server ${BACKEND}/${change.out}`,
    );
  }
  return commands.join("; ");
}

/**
 * The proxy's sessions to `server` now (the `scur` column of HAProxy's `show stat`); throws
 * naming the host when the runtime API does not answer or has no such server.
 */
export async function proxySessionsTo(
  host: Host,
  server: string,
  socket = APISERVER_PROXY_SOCKET,
): Promise<number> {
  const stat = await askRuntimeAPI(host, "show stat", socket);
  const [header = "", ...rows] = stat.trim().split("\n");
  const columns = header.replace(/^# /, "").split(",");
  const [px, sv, cur] = ["pxname", "svname", "scur"].map((c) => columns.indexOf(c));
  const row = rows.map((l) => l.split(",")).find((c) => c[px!] === BACKEND && c[sv!] === server);
  if (row === undefined || cur === -1) {
    throw new Error(
      `the API server proxy on ${host.name} shows no sessions of ${BACKEND}/${server}: ${stat.trim().split("\n").pop()}`,
    );
  }
  return Number(row[cur!]);
}

/**
 * Waits until the proxy holds no session to `server` (bounded by `timeoutMs`); returns how many
 * are left. HAProxy's `shutdown sessions` only marks them: they end at the proxy's next turn,
 * and a client that sends a request on one before that loses it to the restart that follows.
 */
export async function untilNoSessionsTo(
  host: Host,
  server: string,
  opts: { timeoutMs?: number; socket?: string } = {},
): Promise<number> {
  const end = Date.now() + (opts.timeoutMs ?? 2_000);
  for (;;) {
    const left = await proxySessionsTo(host, server, opts.socket);
    if (left === 0 || Date.now() > end) return left;
    await pause(20);
  }
}

/**
 * What the proxy's runtime API on the host answers `commands` (socat, which kubeadm's preflight
 * looks for on every node); throws naming the host and the socket when the API is not there.
 */
async function askRuntimeAPI(host: Host, commands: string, socket: string): Promise<string> {
  const argv = ["socat", "-", `UNIX-CONNECT:${socket}`];
  const r = await host.exec(argv, { sudo: true, stdin: `${commands}\n`, timeoutMs: 15_000 });
  if (r.code !== 0) {
    throw new Error(
      `cannot reach the API server proxy's runtime API (${socket}) on ${host.name}: ${(r.stderr || r.stdout).trim().split("\n").pop()}`,
    );
  }
  return r.stdout;
}

/**
 * Sends `commands` to the proxy's runtime API on the host; throws naming the host when the API
 * is not there or refuses one.
 */
export async function changeProxyRotation(
  host: Host,
  commands: string,
  socket = APISERVER_PROXY_SOCKET,
): Promise<void> {
  // Each command answers an empty line when it worked, a message otherwise.
  const refused = (await askRuntimeAPI(host, commands, socket)).trim();
  if (refused !== "") {
    throw new Error(`the API server proxy on ${host.name} refused "${commands}": ${refused}`);
  }
}
