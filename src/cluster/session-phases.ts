import type { Phase } from "../workflow/phase.js";
import type { ClusterSession } from "./session.js";

// The first phases of every cluster workflow (`up`, the cluster-level upgrade): the hosts of
// the Cluster file reached, then inspected, through the workflow's ClusterSession.

export function connectPhase<D extends { session: ClusterSession }>(): Phase<D> {
  return {
    name: "connect",
    short: "Connect to every host (SSH, or this machine)",
    run: (d) => d.session.connectAll(),
  };
}

export function factsPhase<D extends { session: ClusterSession }>(short: string): Phase<D> {
  return {
    name: "facts",
    short,
    run: async (d) => void (await d.session.inventory()),
  };
}
