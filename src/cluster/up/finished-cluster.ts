import { joinHostPort, parseHostPort } from "../../config/network.js";

// `up` on a finished cluster changes nothing (issue 5), and it does not reconfigure one either:
// what the Cluster file asks for must be what the cluster is, or `up` would go green on a
// cluster other than the one asked for (a nightly upgrade rehearsal passing on the old
// version). What a finished cluster cannot take on is refused before any host is changed:
// another Kubernetes version (upgrades are not done by `up`), another API server endpoint (a
// control plane added to a cluster initialised without a stable endpoint) and other networking
// (pod and Service ranges, DNS domain).

const EXACT = /^v?(\d+)\.(\d+)\.(\d+)([-+][-\w.+]*)?$/;
const PINNED_LABEL = /^(?:release\/)?(?:stable|latest)-(\d+)\.(\d+)$/;

function withV(version: string): string {
  return version.startsWith("v") ? version : `v${version}`;
}

function minorOf(version: string): string | undefined {
  const m = EXACT.exec(version);
  return m ? `${m[1]}.${m[2]}` : undefined;
}

/**
 * Why a finished cluster running `running` does not satisfy `asked` (the Cluster file's
 * kubernetesVersion), or undefined: an exact version must match exactly, a label pinned to a
 * minor (stable-1.35) must match the minor; an unpinned label (stable, latest) takes the
 * cluster as it is.
 */
export function versionMismatch(
  cluster: string,
  asked: string,
  running: string,
  node: string,
): string | undefined {
  const text = asked.trim();
  const exact = EXACT.test(text) ? withV(text) : undefined;
  const pinned = PINNED_LABEL.exec(text);
  const fits = exact
    ? exact === running
    : pinned
      ? `${pinned[1]}.${pinned[2]}` === minorOf(running)
      : true;
  if (fits) return undefined;
  return (
    `kubernetesVersion "${asked}": the cluster "${cluster}" runs ${running} (recorded on ${node}) ` +
    `and "up" does not upgrade or downgrade a cluster; ask for ${running}, or run ` +
    `"kubeforge down" first to build a new cluster`
  );
}

/** host:port with the port made explicit ("https" URLs default to 443, endpoints to bindPort). */
function normalEndpoint(host: string, port: number): string {
  return joinHostPort(host.replace(/^\[|\]$/g, ""), port).toLowerCase();
}

/**
 * Why a finished cluster whose admin.conf points at `server` cannot take `wanted` (the
 * control-plane endpoint this Cluster file leads to, kubeadm's form: host with an optional
 * port, defaulting to `bindPort`), or undefined when they are the same.
 */
export function endpointMismatch(opts: {
  cluster: string;
  server: string;
  wanted: string;
  bindPort: number;
  node: string;
  why: string;
}): string | undefined {
  const url = new URL(opts.server);
  const current = normalEndpoint(url.hostname, Number(url.port || 443));
  const parsed = parseHostPort(opts.wanted);
  if ("problem" in parsed) throw new Error(`endpoint "${opts.wanted}": ${parsed.problem}`);
  const wanted = normalEndpoint(parsed.host, parsed.port ?? opts.bindPort);
  if (current === wanted) return undefined;
  return (
    `the cluster "${opts.cluster}" serves its API at ${current} (admin.conf on ${opts.node}), ` +
    `but this Cluster file needs ${wanted} (${opts.why}); "up" cannot move a finished ` +
    `cluster's API endpoint: run "kubeforge down" first to build a new cluster`
  );
}

type Networking = { podSubnet: string; serviceSubnet: string; dnsDomain: string };

/** A comma-separated CIDR list compared as kubeadm reads it: trimmed items, case aside. */
function cidrList(text: string | undefined): string {
  return (text ?? "")
    .split(",")
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== "")
    .join(",");
}

/**
 * Why a finished cluster whose kubeadm-config holds `running` (its ClusterConfiguration's
 * networking) does not have the networking the Cluster file asks for: one sentence per field
 * that differs, none when they agree. The pod and Service ranges and the DNS domain are baked
 * into certificates, static pods, the kubelet's configuration and every Pod and Service made
 * since; `up` does not rebuild them.
 */
export function networkingMismatches(opts: {
  cluster: string;
  asked: Networking;
  running: Partial<Networking>;
  node: string;
}): string[] {
  const fields: [keyof Networking, (v: string | undefined) => string][] = [
    ["podSubnet", cidrList],
    ["serviceSubnet", cidrList],
    ["dnsDomain", (v) => (v ?? "").trim().toLowerCase()],
  ];
  return fields.flatMap(([field, normal]) => {
    const asked = normal(opts.asked[field]);
    const running = normal(opts.running[field]);
    if (asked === running) return [];
    const shown = (v: string) => (v === "" ? "none" : v);
    return [
      `networking.${field} ${shown(asked)}: the cluster "${opts.cluster}" was built with ` +
        `${shown(running)} (kube-system/kubeadm-config, through ${opts.node}) and "up" does not ` +
        `change a finished cluster's networking; ask for ${shown(running)}, or run ` +
        `"kubeforge down" first to build a new cluster`,
    ];
  });
}
