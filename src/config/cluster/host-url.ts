import { isDNS1123Subdomain } from "../names.js";
import { formatIP, joinHostPort, parseIP } from "../network.js";
import type { HostURL } from "./types.js";

// A node's `host`: "local", "docker" (a container on the runner's Docker engine), or
// "ssh://[user@]host[:port]" with IPv6 literals in brackets, as in OpenSSH's own ssh:// form
// (ssh(1): "ssh://[user@]hostname[:port]"). No password, path or query.

/** Login names as useradd accepts them (shadow-utils' default NAME_REGEX, plus capitals). */
const USER = /^[A-Za-z_][A-Za-z0-9_.-]{0,31}$/;

export function isSshUser(text: string): boolean {
  return USER.test(text);
}

/**
 * Hides a password in "ssh://user:password@host" — or "user:password@host", written without
 * the scheme — before the text is shown anywhere.
 */
export function redactHostURL(text: string): string {
  return text.replace(/^((?:[a-zA-Z][a-zA-Z0-9+.-]*:\/\/)?[^:@/]*):(?!\/\/).*@/, "$1:***@");
}

function parseHostPart(text: string): { host: string; port?: number } | { problem: string } {
  let host: string;
  let portText: string | undefined;
  if (text.startsWith("[")) {
    const m = /^\[([^\]]*)\](?::(.*))?$/.exec(text);
    if (!m) return { problem: "a bracketed IPv6 address must be followed by nothing or :port" };
    host = m[1]!;
    portText = m[2];
    if (parseIP(host)?.kind() !== "ipv6" || !host.includes(":")) {
      return { problem: "only an IPv6 address goes in brackets" };
    }
  } else {
    const colons = text.split(":").length - 1;
    if (colons > 1) {
      return { problem: "an IPv6 address must be in brackets (ssh://user@[fd00::1]:22)" };
    }
    [host, portText] = colons === 1 ? (text.split(":") as [string, string]) : [text, undefined];
    if (host === "") return { problem: "the host is missing" };
    // "10.0.0.256" is a valid DNS subdomain by its letters, but nobody means a name by it.
    const dottedNumbers = /^[0-9.]+$/.test(host);
    if (!parseIP(host) && (dottedNumbers || !isDNS1123Subdomain(host.toLowerCase()))) {
      return { problem: `"${host}" is neither an IP address nor a DNS name` };
    }
  }
  const canonical = parseIP(host) ? formatIP(host) : host.toLowerCase();
  if (portText === undefined) return { host: canonical };
  if (!/^[0-9]{1,5}$/.test(portText) || Number(portText) < 1 || Number(portText) > 65535) {
    return { problem: `the port must be a number from 1 to 65535` };
  }
  return { host: canonical, port: Number(portText) };
}

/**
 * Parses a node's host: "local", "docker" or "ssh://[user@]host[:port]". The host comes back lower-case
 * (IPs in canonical form), so two spellings of one machine compare equal. The problem, when
 * there is one, is a phrase that does not repeat the text (which could hold a password).
 */
export function parseHostURL(text: string): HostURL | { problem: string } {
  if (text === "local") return { type: "local" };
  if (text === "docker") return { type: "docker" };
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\//.exec(text)?.[1];
  if (scheme === undefined) {
    return {
      problem: 'it must be "local", "docker" or an ssh:// URL such as ssh://ubuntu@203.0.113.10:22',
    };
  }
  if (scheme.toLowerCase() !== "ssh") {
    return { problem: `the scheme must be ssh://, not ${scheme}://` };
  }
  let rest = text.slice(scheme.length + 3);
  if (rest.endsWith("/")) rest = rest.slice(0, -1);
  if (/[/?#]/.test(rest)) return { problem: "an ssh:// URL has no path, query or fragment" };
  const at = rest.lastIndexOf("@");
  let user: string | undefined;
  if (at >= 0) {
    const userInfo = rest.slice(0, at);
    rest = rest.slice(at + 1);
    if (userInfo.includes(":")) {
      return { problem: "a password does not belong in the URL; set ssh.password instead" };
    }
    if (!isSshUser(userInfo)) {
      return {
        problem: `the user "${userInfo}" is not a valid login name (letters, digits, '_', '.', '-')`,
      };
    }
    user = userInfo;
  }
  const hostPart = parseHostPart(rest);
  if ("problem" in hostPart) return hostPart;
  return {
    type: "ssh",
    host: hostPart.host,
    ...(hostPart.port !== undefined ? { port: hostPart.port } : {}),
    ...(user !== undefined ? { user } : {}),
  };
}

/** "ssh://user@host:port" (IPv6 bracketed), "local" or "docker". */
export function formatHostURL(url: HostURL): string {
  if (url.type !== "ssh") return url.type;
  const user = url.user !== undefined ? `${url.user}@` : "";
  const host = url.host.includes(":") ? `[${url.host}]` : url.host;
  return url.port !== undefined
    ? `ssh://${user}${joinHostPort(url.host, url.port)}`
    : `ssh://${user}${host}`;
}
