import { parseIP } from "../config/network.js";
import { readFileIfExists, type Host } from "../remote/host.js";
import { displayCommand } from "../remote/command-limits.js";

// The address the API server advertises when the config names none: kubeadm's
// SetAPIEndpointDynamicDefaults → ChooseAPIServerBindAddress → k8s.io/apimachinery
// util/net ChooseHostInterface. It takes the interfaces of the default routes (IPv4 routes
// first, then IPv6), and returns the first global unicast address of that family on the first
// such interface that is up; when the interface has only link-local addresses (RFC 5549
// setups) a global address on the loopback interface is used instead.
//
// Where kubeadm finds no default route it falls back to 0.0.0.0 and then refuses it ("cannot
// use 0.0.0.0 as the bind address"); kubeforge says directly what is missing.

const IPV4_ROUTES = "/proc/net/route";
const IPV6_ROUTES = "/proc/net/ipv6_route";

export interface DefaultRoute {
  iface: string;
  family: 4 | 6;
  gateway: string;
}

/** Default routes in /proc/net/route (hex, little-endian): destination 0.0.0.0. */
export function parseIPv4DefaultRoutes(text: string): DefaultRoute[] {
  const routes: DefaultRoute[] = [];
  for (const line of text.split("\n")) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 3 || fields[0] === "Iface" || !/^[0-9A-Fa-f]{8}$/.test(fields[1]!))
      continue;
    if (Number.parseInt(fields[1]!, 16) !== 0) continue;
    const gw = fields[2]!;
    const bytes = [6, 4, 2, 0].map((i) => Number.parseInt(gw.slice(i, i + 2), 16));
    routes.push({ iface: fields[0]!, family: 4, gateway: bytes.join(".") });
  }
  return routes;
}

/** Default routes in /proc/net/ipv6_route: destination ::, with a gateway (else it is lo's). */
export function parseIPv6DefaultRoutes(text: string): DefaultRoute[] {
  const routes: DefaultRoute[] = [];
  for (const line of text.split("\n")) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 10 || !/^[0-9a-fA-F]{32}$/.test(fields[0]!)) continue;
    if (!/^0+$/.test(fields[0]!) || /^0+$/.test(fields[4]!)) continue;
    const gateway = fields[4]!.match(/.{4}/g)!.join(":");
    routes.push({ iface: fields[9]!, family: 6, gateway: parseIP(gateway)?.toString() ?? gateway });
  }
  return routes;
}

export interface IPAddrInfo {
  family?: string;
  local?: string;
}
export interface IPLink {
  ifname?: string;
  flags?: string[];
  addr_info?: IPAddrInfo[];
}

/** Go's net.IP.IsGlobalUnicast. */
export function isGlobalUnicast(address: string): boolean {
  const ip = parseIP(address);
  if (!ip) return false;
  return !["unspecified", "loopback", "multicast", "linkLocal", "broadcast"].includes(ip.range());
}

function globalAddress(link: IPLink | undefined, family: 4 | 6): string | undefined {
  if (!link || !(link.flags ?? []).includes("UP")) return undefined;
  const wanted = family === 4 ? "inet" : "inet6";
  return (link.addr_info ?? []).find(
    (a) => a.family === wanted && a.local && isGlobalUnicast(a.local),
  )?.local;
}

/** Picks the address from routes and `ip -j addr show` output, as ChooseHostInterface does. */
export function chooseAddress(routes: DefaultRoute[], links: IPLink[]): string | undefined {
  const byName = new Map(links.map((l) => [l.ifname, l]));
  const loopback = links.find((l) => (l.flags ?? []).includes("LOOPBACK"));
  for (const family of [4, 6] as const) {
    for (const route of routes.filter((r) => r.family === family)) {
      const found =
        globalAddress(byName.get(route.iface), family) ?? globalAddress(loopback, family);
      if (found) return found;
    }
  }
  return undefined;
}

async function readIfExists(host: Host, path: string): Promise<string | undefined> {
  return (await readFileIfExists(host, path))?.toString("utf8");
}

/** The host's interfaces and addresses (`ip -j addr show`); `purpose` ends an error's sentence. */
async function listLinks(host: Host, purpose: string): Promise<IPLink[]> {
  const argv = ["ip", "-j", "addr", "show"];
  const result = await host.exec(argv, { readOnly: true });
  if (result.code !== 0) {
    throw new Error(
      `${host.name}: cannot list the network addresses ("${displayCommand(argv)}" exited with code ${result.code}: ${result.stderr.trim()}); ${purpose}`,
    );
  }
  try {
    return JSON.parse(result.stdout) as IPLink[];
  } catch (e) {
    throw new Error(`${host.name}: "${displayCommand(argv)}" did not print JSON; ${purpose}`, {
      cause: e,
    });
  }
}

/**
 * The global unicast address of the other family on the interface that holds `address` (the
 * first one, as ChooseHostInterface takes the first of a family), or a sentence saying why
 * there is none. Pure: from `ip -j addr show` output.
 */
export function otherFamilyAddress(
  links: IPLink[],
  address: string,
): { address: string } | { problem: string } {
  const family = parseIP(address)?.kind() === "ipv6" ? 6 : 4;
  const other = family === 4 ? 6 : 4;
  const link = links.find((l) =>
    (l.addr_info ?? []).some(
      (a) => a.local !== undefined && parseIP(a.local)?.toString() === parseIP(address)?.toString(),
    ),
  );
  if (!link) return { problem: `no interface holds ${address}` };
  const found = globalAddress(link, other);
  if (found) return { address: found };
  return {
    problem: `${link.ifname ?? "the interface"} (which holds ${address}) has no global IPv${other} address${(link.flags ?? []).includes("UP") ? "" : " that is up"}`,
  };
}

/**
 * A dual-stack node's two addresses: `given` (nodes[].address: none, one, or the pair), the
 * missing ones detected — the advertise address as kubeadm picks it, and its partner of the
 * other family on the same interface. Throws a sentence naming the host when it has none.
 */
export async function detectNodeIPs(
  host: Host,
  given: readonly string[],
): Promise<[string, string]> {
  if (given.length === 2) return [given[0]!, given[1]!];
  const first = given[0] ?? (await detectAdvertiseAddress(host));
  const partner = otherFamilyAddress(
    await listLinks(host, "set the node's address to its IPv4,IPv6 pair"),
    first,
  );
  if ("problem" in partner) {
    throw new Error(
      `${host.name}: a dual-stack cluster needs an IPv4 and an IPv6 address on every node, and ${partner.problem}; give the host an address of that family, or set the node's address to its pair ("192.0.2.10,2001:db8::10")`,
    );
  }
  return [first, partner.address];
}

/** The IP the API server should advertise on this host; throws a sentence saying why not. */
export async function detectAdvertiseAddress(host: Host): Promise<string> {
  const [v4, v6, links] = await Promise.all([
    readIfExists(host, IPV4_ROUTES),
    readIfExists(host, IPV6_ROUTES),
    listLinks(host, "set --apiserver-advertise-address"),
  ]);
  const routes = [...parseIPv4DefaultRoutes(v4 ?? ""), ...parseIPv6DefaultRoutes(v6 ?? "")];

  if (v4 === undefined) {
    // No routing table to read (ChooseHostInterface: chooseIPFromHostInterfaces): the first
    // global address of any interface that is up, IPv4 first.
    for (const family of [4, 6] as const) {
      for (const link of links) {
        const found = (link.flags ?? []).includes("LOOPBACK")
          ? undefined
          : globalAddress(link, family);
        if (found) return found;
      }
    }
    throw new Error(
      `${host.name}: ${IPV4_ROUTES} is missing and no interface has a global address; set --apiserver-advertise-address`,
    );
  }
  if (routes.length === 0) {
    throw new Error(
      `${host.name}: there is no default route in ${IPV4_ROUTES} or ${IPV6_ROUTES}, so the API server's advertise address cannot be chosen; set --apiserver-advertise-address (or localAPIEndpoint.advertiseAddress)`,
    );
  }
  const chosen = chooseAddress(routes, links);
  if (!chosen) {
    const ifaces = [...new Set(routes.map((r) => r.iface))].join(", ");
    throw new Error(
      `${host.name}: the default route's interface (${ifaces}) has no global unicast address that is up; set --apiserver-advertise-address`,
    );
  }
  return chosen;
}
