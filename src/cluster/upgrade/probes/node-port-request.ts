import { request } from "node:http";
import type { Duplex } from "node:stream";
import type { RawResponse } from "../../../kube/types.js";
import type { Host } from "../../../remote/host.js";
import { connectWithin } from "../../../remote/tcp-connect.js";
import { PathUnavailable } from "./prober.js";

// One HTTP GET to a node's NodePort, as the runner reaches the node: a TCP connection from the
// runner, or one the node makes over its SSH connection (Host.connectTo) — the route the cluster
// workflow takes to a node's addresses (remote/route.ts). Failures are sorted into the workload's
// and the path's. Why: kube-proxy REJECTs a NodePort whose Service has no endpoints
// (pkg/proxy/iptables/proxier.go syncProxyRules: a filter rule "<svc> has no endpoints" with
// -j REJECT, whose default answer is ICMP port-unreachable: the connect is refused), so a refused
// connection says "no Pod ready"; a reset or a missing answer is a Pod that failed the request.
// A node that cannot be reached at all (no route to it, its SSH connection gone) says nothing
// about the workload: PathUnavailable.

/** Opens a TCP connection to host:port; rejects with an error carrying the socket's code. */
export type Connect = (host: string, port: number, timeoutMs: number) => Promise<Duplex>;

/** Socket errors that mean the node itself cannot be reached from where the connection starts. */
const UNREACHABLE = new Set(["EHOSTUNREACH", "ENETUNREACH", "EHOSTDOWN", "EADDRNOTAVAIL"]);

/**
 * What an SSH server says when the node's own connect failed (OpenSSH answers a failed
 * direct-tcpip with the connect's strerror): "No route to host" and "Network is unreachable" are
 * the path's; "Connection refused" and the rest are the target's.
 */
const SSH_UNREACHABLE = /No route to host|Network is unreachable|administratively prohibited/i;

/** A connect that got no answer in time, with the code a socket's own timeout carries. */
const noAnswer = (host: string, port: number) =>
  Object.assign(new Error(`connect ${host}:${port}: no answer`), { code: "ETIMEDOUT" });

/** A connection from the runner itself. */
export const directConnect: Connect = (host, port, timeoutMs) =>
  connectWithin(host, port, timeoutMs, () => noAnswer(host, port));

/** A connection the node makes (over its SSH connection); undefined when the host has none. */
export function connectFrom(node: Host): Connect | undefined {
  const connectTo = node.connectTo?.bind(node);
  if (!connectTo) return undefined;
  return async (host, port, timeoutMs) => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(noAnswer(host, port)), timeoutMs);
    });
    const opening = connectTo(host, port);
    try {
      return await Promise.race([opening, timeout]);
    } catch (e) {
      // A channel that opens after the timeout is closed at once.
      void opening.then(
        (d) => d.destroy(),
        () => undefined,
      );
      throw sortSshFailure(e);
    } finally {
      clearTimeout(timer);
    }
  };
}

/** An SSH channel's failure as the workload's failure or the path's (PathUnavailable). */
function sortSshFailure(e: unknown): Error {
  const err = e instanceof Error ? e : new Error(String(e));
  if ((err as { code?: string }).code === "ETIMEDOUT") return err;
  // ssh2's "(SSH) Channel open failure: <the server's reason>": the node tried and failed.
  const opened = /Channel open failure: (.*)$/.exec(err.message);
  if (opened && !SSH_UNREACHABLE.test(opened[1]!)) return new Error(opened[1], { cause: e });
  return new PathUnavailable(`the node could not be reached: ${err.message}`, { cause: e });
}

/** A socket error as the workload's failure or the path's (PathUnavailable). */
export function sortSocketFailure(e: unknown): Error {
  if (e instanceof PathUnavailable) return e;
  const err = e instanceof Error ? e : new Error(String(e));
  const code = (err as { code?: string }).code;
  if (code && UNREACHABLE.has(code)) {
    return new PathUnavailable(`the node could not be reached: ${err.message}`, { cause: e });
  }
  return err;
}

// Bodies of /hostname are a Pod's name; more is never needed.
const MAX_BODY = 16 * 1024;

/**
 * GET http://address:port`path` over `connect`, bounded by timeoutMs; resolves with any HTTP
 * answer. Rejects with the workload's failure (refused, reset, no answer) or PathUnavailable.
 */
export async function nodePortGet(
  connect: Connect,
  address: string,
  port: number,
  path: string,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<RawResponse> {
  const started = Date.now();
  let socket: Duplex;
  try {
    socket = await connect(address, port, timeoutMs);
  } catch (e) {
    throw sortSocketFailure(e);
  }
  const left = Math.max(1, timeoutMs - (Date.now() - started));
  return new Promise<RawResponse>((resolve, reject) => {
    // A timer of its own bounds what is left of the whole request: the request's `timeout` is an
    // idle timeout on the socket, which a slow trickle of bytes would keep from firing.
    const timer = setTimeout(
      () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)),
      left,
    );
    const settle =
      <T>(f: (v: T) => void) =>
      (v: T) => {
        clearTimeout(timer);
        f(v);
      };
    const req = request(
      {
        host: address,
        port,
        path,
        method: "GET",
        // No agent: with one (even `agent: false`, a fresh Agent) Node opens its own connection
        // and ignores createConnection. Without one, the connection ends with the answer.
        createConnection: () => socket,
        ...(signal ? { signal } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (c: Buffer) => {
          if (size < MAX_BODY) chunks.push(c);
          size += c.length;
        });
        res.on(
          "end",
          settle(() =>
            resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }),
          ),
        );
        res.on(
          "error",
          settle((e: Error) => reject(sortSocketFailure(e))),
        );
      },
    );
    req.on(
      "error",
      settle((e: Error) => reject(sortSocketFailure(e))),
    );
    req.end();
  });
}
