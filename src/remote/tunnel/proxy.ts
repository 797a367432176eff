import { connectWithin } from "../tcp-connect.js";
import type { Duplex } from "node:stream";
import { openLocalForward } from "../ssh/forward.js";

// A TCP proxy on the runner's loopback with failover across several ways to the same service:
// the API servers of a cluster, each reached directly or through an SSH connection. Every
// accepted connection goes to the target that answered last; when it cannot connect, the next
// one is tried, so `kubectl` keeps working while any one control plane is down. TLS passes
// through untouched: the client verifies the API server's own certificate.

export interface ProxyTarget {
  /** For logs: "cp-1 via ssh", "10.0.0.1:6443". */
  readonly describe: string;
  /** One connection to the service; rejects when the target cannot be reached now. */
  open(): Promise<Duplex>;
}

export interface TunnelProxy {
  port: number;
  close(): Promise<void>;
}

/** A direct TCP target; the connection attempt is bounded by `timeoutMs`. */
export function directTarget(host: string, port: number, timeoutMs = 5000): ProxyTarget {
  return {
    describe: `${host}:${port}`,
    open: () =>
      connectWithin(
        host,
        port,
        timeoutMs,
        () => new Error(`no connection to ${host}:${port} within ${timeoutMs} ms`),
      ),
  };
}

export async function startTunnelProxy(
  targets: readonly ProxyTarget[],
  opts: { log?: (line: string) => void } = {},
): Promise<TunnelProxy> {
  if (targets.length === 0) throw new Error("a tunnel needs at least one target");
  const log = opts.log ?? (() => {});
  let preferred = 0;

  const openAny = async (): Promise<Duplex> => {
    const failures: string[] = [];
    for (let i = 0; i < targets.length; i++) {
      const index = (preferred + i) % targets.length;
      const target = targets[index]!;
      try {
        const stream = await target.open();
        if (index !== preferred) log(`now using ${target.describe}`);
        preferred = index;
        return stream;
      } catch (e) {
        failures.push(`${target.describe}: ${(e as Error).message}`);
      }
    }
    throw new Error(`no target answers: ${failures.join("; ")}`);
  };

  // The same listener as an SSH local forward (127.0.0.1, any free port), each accepted
  // connection piped to whichever target answers.
  const listener = await openLocalForward(openAny, log);
  return { port: listener.port, close: () => listener.close() };
}
