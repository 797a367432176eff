import type { ClusterNodeSpec, ClusterSpec } from "../config/cluster/types.js";
import { fleet, FleetError, hostReporter } from "../remote/fleet.js";
import { closeHosts, type Host } from "../remote/host.js";
import type { Reporter } from "../workflow/reporter.js";
import { resetNode } from "./up/reset-node.js";

// `kubeforge down`: kubeadm's reset on every host of the Cluster file. Workers go in parallel;
// control planes one after the other, last first, each removing its own etcd member from a
// cluster that still has quorum (parallel removals could stop a member's etcd before another
// removal reaches a majority).

export interface DownRequest {
  spec: ClusterSpec;
  connect: (node: ClusterNodeSpec) => Promise<Host>;
  reporter: Reporter;
  dryRun: boolean;
}

export async function down(req: DownRequest): Promise<void> {
  const { spec, reporter } = req;
  const hosts: Host[] = [];
  const reset = async (node: ClusterNodeSpec) => {
    const host = await req.connect(node);
    hosts.push(host);
    await resetNode(host, hostReporter(reporter, node.name), { dryRun: req.dryRun });
  };
  const workers = spec.nodes.filter((n) => n.role === "worker");
  const controlPlanes = spec.nodes.filter((n) => n.role === "control-plane").reverse();
  const failures: FleetError["failures"] = [];
  const collect = (e: unknown) => {
    if (e instanceof FleetError) failures.push(...e.failures);
    else throw e;
  };
  try {
    await Promise.all([
      fleet(workers, (n) => n.name, reset, { concurrency: spec.concurrency }).catch(collect),
      fleet(controlPlanes, (n) => n.name, reset, { concurrency: 1 }).catch(collect),
    ]);
  } finally {
    await closeHosts(hosts);
  }
  if (failures.length > 0) throw new FleetError(failures, spec.nodes.length);
}
