import type { SshEndpoint } from "./types.js";

export type SshFailure =
  "unreachable" | "authentication" | "host-key" | "timeout" | "dropped" | "sudo" | "cancelled";

/** A transport failure of one host; the message is one sentence that names the host. */
export class SshError extends Error {
  constructor(
    /** The host's name (node name). */
    readonly host: string,
    readonly failure: SshFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "SshError";
  }
}

/** `ssh://user@host:port`, with brackets around an IPv6 address. */
export function endpointUrl(e: SshEndpoint): string {
  const host = e.host.includes(":") ? `[${e.host}]` : e.host;
  return `ssh://${e.user}@${host}:${e.port}`;
}

/** How messages name a host: `cp-1 (ssh://ubuntu@203.0.113.10:22)`. */
export function hostLabel(name: string, e: SshEndpoint): string {
  return `${name} (${endpointUrl(e)})`;
}
