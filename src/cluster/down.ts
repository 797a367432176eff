import type { ClusterNodeSpec, ClusterSpec } from "../config/cluster/types.js";
import { fleet, hostReporter } from "../remote/fleet.js";
import { closeHosts, type Host } from "../remote/host.js";
import type { Reporter } from "../workflow/reporter.js";
import { resetNode } from "./up/reset-node.js";

// `kubeforge down`: kubeadm's reset on every host of the Cluster file, all in parallel (bounded
// by `concurrency`). The whole etcd cluster goes away with its data directories, so reset's
// remove-etcd-member phase cleans the data directory without removing the member: removing
// members one by one only shrinks a cluster that
// is deleted anyway, and once one control plane is down etcd refuses every removal that would
// leave the rest without a quorum of started members ("etcdserver: unhealthy cluster"), which
// kubeadm's reset retries for minutes per node.

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
    await resetNode(host, hostReporter(reporter, node.name), {
      dryRun: req.dryRun,
      removeEtcdMember: false,
    });
  };
  try {
    await fleet(spec.nodes, (n) => n.name, reset, { concurrency: spec.concurrency });
  } finally {
    await closeHosts(hosts);
  }
}
