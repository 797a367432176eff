import { setTimeout as delay } from "node:timers/promises";
import { joinHostPort } from "../../../config/network.js";
import { CANARY_NAME, CANARY_PATH } from "../../../manifests/probe-canary.js";
import { nodePortGet, type Connect } from "./node-port-request.js";
import { PathUnavailable, type ProbeTarget } from "./prober.js";

// The canary asked on its Service's NodePort (kubeadm-upgrade.md §5.5): every node serves it and
// forwards to a ready Pod on any node (externalTrafficPolicy Cluster), so a request enters by a
// node and tells whether the workload answers. The nodes the runner reaches — directly, or
// through the node's own SSH connection, as the workflow reaches a node's addresses — that answer
// the canary are the path; each sample enters by one no upgrade step is running on, so a node
// whose kubelet or kube-proxy is being restarted does not measure its own restart.

/** A node the runner may reach the NodePort on, with its ways there, preferred first. */
export interface NodePortCandidate {
  name: string;
  /** The node's InternalIP: where kube-proxy serves NodePorts. */
  address: string;
  routes: { via: "direct" | "ssh"; connect: Connect }[];
}

/** A node that answered the canary on its NodePort, and the way it answered. */
export interface NodePortNode {
  name: string;
  address: string;
  via: "direct" | "ssh";
  connect: Connect;
}

export interface NodePortPath {
  /** The nodes that answered, in the candidates' order. */
  nodes: NodePortNode[];
  /** Why each other node is not on the path ("w-1: connect ECONNREFUSED …"). */
  refused: string[];
}

const firstLine = (e: unknown) => (e instanceof Error ? e.message : String(e)).split("\n")[0]!;

/**
 * Whether a failed request got to the node: anything but no route and a connect with no answer.
 * A refused connect is the node's answer (kube-proxy not serving the port yet): the next way
 * there would meet the same node.
 */
const gotThere = (e: unknown) =>
  !(e instanceof PathUnavailable) && (e as { code?: string }).code !== "ETIMEDOUT";

/**
 * The first way to `c` on which GET CANARY_PATH answers 200 within timeoutMs, or why it did not;
 * a way is tried only when the ones before it did not get to the node.
 */
async function tryNode(
  c: NodePortCandidate,
  port: number,
  timeoutMs: number,
): Promise<NodePortNode | string> {
  const why: string[] = [];
  for (const r of c.routes) {
    try {
      const res = await nodePortGet(r.connect, c.address, port, CANARY_PATH, timeoutMs);
      if (res.status === 200) return { name: c.name, address: c.address, ...r };
      why.push(`answered ${res.status}`);
      break;
    } catch (e) {
      why.push(firstLine(e));
      if (gotThere(e)) break;
    }
  }
  return `${c.name}: ${why.join("; ") || "no way to reach it"}`;
}

export interface PathChoiceOptions {
  /** Bound on one request. */
  timeoutMs: number;
  /**
   * How long nodes that did not answer are asked again: kube-proxy serves a NodePort only once it
   * has seen the Service's ready endpoints, a moment after the Deployment is available.
   */
  retryForMs: number;
  retryEveryMs: number;
}

/** Asks every candidate at once, again while some did not answer; those that did are the path. */
export async function chooseNodePortPath(
  candidates: readonly NodePortCandidate[],
  port: number,
  o: PathChoiceOptions,
): Promise<NodePortPath> {
  const end = Date.now() + o.retryForMs;
  const answered = new Map<string, NodePortNode>();
  let refused = new Map<string, string>();
  for (;;) {
    const left = candidates.filter((c) => !answered.has(c.name));
    const tried = await Promise.all(left.map((c) => tryNode(c, port, o.timeoutMs)));
    refused = new Map();
    tried.forEach((t, i) => {
      if (typeof t === "string") refused.set(left[i]!.name, t);
      else answered.set(t.name, t);
    });
    if (refused.size === 0 || Date.now() + o.retryEveryMs > end) break;
    await delay(o.retryEveryMs);
  }
  return {
    nodes: candidates.flatMap((c) => answered.get(c.name) ?? []),
    refused: [...refused.values()],
  };
}

/** The node names of running steps ("w-1 drain" → "w-1"). */
export const busyNodes = (running: readonly string[]): Set<string> =>
  new Set(running.map((s) => s.split(" ")[0]!));

/** The node a sample enters by: the first no step runs on, else the first. */
export function pickNode(nodes: readonly NodePortNode[], running: readonly string[]): NodePortNode {
  const busy = busyNodes(running);
  return nodes.find((n) => !busy.has(n.name)) ?? nodes[0]!;
}

/** "http://10.0.0.12:31234/hostname". */
export const nodePortURL = (address: string, port: number) =>
  `http://${joinHostPort(address, port)}${CANARY_PATH}`;

/**
 * The canary through its NodePort: each sample a GET on the node pickNode chooses; 200 is up.
 * `running` gives the steps running now (the report's). Errors name the node the sample used.
 */
export function nodePortTarget(
  path: NodePortNode[],
  port: number,
  timeoutMs: number,
  running: () => readonly string[],
): ProbeTarget {
  const on = path.map((n) => `${n.name} ${n.address}${n.via === "ssh" ? " (through SSH)" : ""}`);
  return {
    name: CANARY_NAME,
    kind: "workload",
    url: nodePortURL(path[0]!.address, port),
    checks: `GET ${nodePortURL(path[0]!.address, port)} via NodePort ${port}, on the first node no step runs on of ${on.join(", ")}`,
    check: async (signal) => {
      const n = pickNode(path, running());
      const url = nodePortURL(n.address, port);
      let res;
      try {
        res = await nodePortGet(n.connect, n.address, port, CANARY_PATH, timeoutMs, signal);
      } catch (e) {
        const said = `${n.name} ${url}: ${firstLine(e)}`;
        throw e instanceof PathUnavailable
          ? new PathUnavailable(said, { cause: e })
          : new Error(said, { cause: e });
      }
      if (res.status !== 200) {
        throw new Error(
          `${n.name} ${url} answered ${res.status}: ${res.body.trim().slice(0, 200)}`,
        );
      }
    },
  };
}

export interface CanaryPathInput {
  /** The canary Service's allocated node port; undefined: it has none. */
  port: number | undefined;
  candidates: readonly NodePortCandidate[];
  /** The service proxy's target, made only when it is the path. */
  proxied: () => Promise<ProbeTarget>;
  /** The steps running now (the report's). */
  running: () => readonly string[];
  /** Bound on one sample's request. */
  timeoutMs: number;
  log: (line: string) => void;
}

/**
 * The canary's path: its NodePort on the nodes that answer it, else the API server's service
 * proxy. One log line says which, with the port and the nodes, or why no node is on the path.
 */
export async function chooseCanaryTarget(
  i: CanaryPathInput,
  choice: PathChoiceOptions,
): Promise<ProbeTarget> {
  if (i.port === undefined) {
    i.log("the canary's Service has no node port; through the API server's service proxy");
    return i.proxied();
  }
  const path = await chooseNodePortPath(i.candidates, i.port, choice);
  if (path.nodes.length === 0) {
    const why = path.refused.join("; ") || "no node has an InternalIP";
    i.log(
      `no node answered on NodePort ${i.port} (${why}); through the API server's service proxy`,
    );
    return i.proxied();
  }
  const on = path.nodes.map(
    (n) => `${n.name} ${n.address}${n.via === "ssh" ? " through SSH" : ""}`,
  );
  const not = path.refused.length > 0 ? `; not on ${path.refused.join("; ")}` : "";
  i.log(`the canary is asked on NodePort ${i.port} of ${on.join(", ")}${not}`);
  return nodePortTarget(path.nodes, i.port, i.timeoutMs, i.running);
}
