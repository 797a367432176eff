import type { ClusterNodeSpec } from "../cluster/types.js";

// A topology written as counts ("1 control-plane, 2 workers") expanded to the Cluster's nodes,
// every one a `host: docker` container: the shortcut an action input can offer for a multi-node
// cluster on one runner. Pure; the Cluster built from it is validated like any other.

export interface NodeCounts {
  controlPlanes: number;
  workers: number;
}

/** Upper bounds that keep a cluster on one runner sensible (etcd beyond 7 members is slower). */
export const MAX_CONTROL_PLANES = 7;
export const MAX_WORKERS = 50;

const ITEM = /^(\d+)\s+(control-planes?|workers?)$/;

/**
 * Reads "1 control-plane, 2 workers" (items separated by commas or new lines, each "<count> control-plane"
 * or "<count> worker", singular or plural, each kind at most once). A problem is one phrase
 * naming what is wrong, without the rest of the text.
 */
export function parseNodeCounts(text: string): NodeCounts | { problem: string } {
  const items = text
    .split(/[,\n]/)
    .map((s) => s.trim().replace(/\s+/g, " "))
    .filter((s) => s !== "");
  if (items.length === 0)
    return { problem: 'it is empty; write e.g. "1 control-plane, 2 workers"' };
  const seen: Partial<NodeCounts> = {};
  for (const item of items) {
    const m = ITEM.exec(item.toLowerCase());
    if (!m) {
      return {
        problem: `"${item}" is not "<count> control-plane" or "<count> worker" (e.g. "3 control-planes, 2 workers")`,
      };
    }
    const key = m[2]!.startsWith("control") ? "controlPlanes" : "workers";
    if (seen[key] !== undefined) return { problem: `${m[2]} is counted twice` };
    seen[key] = Number(m[1]);
  }
  const counts = { controlPlanes: seen.controlPlanes ?? 1, workers: seen.workers ?? 0 };
  return countsProblem(counts) ?? counts;
}

/** Why counts cannot be a cluster, or undefined. */
export function countsProblem(c: NodeCounts): { problem: string } | undefined {
  if (
    !Number.isInteger(c.controlPlanes) ||
    c.controlPlanes < 1 ||
    c.controlPlanes > MAX_CONTROL_PLANES
  ) {
    return {
      problem: `control planes must number 1 to ${MAX_CONTROL_PLANES}, got ${c.controlPlanes}`,
    };
  }
  if (!Number.isInteger(c.workers) || c.workers < 0 || c.workers > MAX_WORKERS) {
    return { problem: `workers must number 0 to ${MAX_WORKERS}, got ${c.workers}` };
  }
  return undefined;
}

/**
 * The nodes of a cluster of docker containers: control planes cp-1..cp-N (cp-1 runs init),
 * then workers w-1..w-M. Throws on counts countsProblem refuses.
 */
export function dockerNodes(c: NodeCounts): Pick<ClusterNodeSpec, "name" | "role" | "host">[] {
  const problem = countsProblem(c);
  if (problem) throw new Error(problem.problem);
  return [
    ...Array.from({ length: c.controlPlanes }, (_, i) => ({
      name: `cp-${i + 1}`,
      role: "control-plane" as const,
      host: "docker",
    })),
    ...Array.from({ length: c.workers }, (_, i) => ({
      name: `w-${i + 1}`,
      role: "worker" as const,
      host: "docker",
    })),
  ];
}
