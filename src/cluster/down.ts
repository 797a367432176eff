import type { ClusterNodeSpec, ClusterSpec } from "../config/cluster/types.js";
import { failuresOf, fleet, FleetError, hostReporter } from "../remote/fleet.js";
import { closeHosts, type Host } from "../remote/host.js";
import type { Reporter } from "../workflow/reporter.js";
import { nodeCondition, type NodeCondition } from "./node-state.js";
import { resetNode } from "./reset-node.js";
import { isDockerNode, removeDockerNodes } from "./docker-nodes.js";

// `kubeforge down`: kubeadm's reset on every host of the Cluster file, all in parallel (bounded
// by `concurrency`). Every host is checked first, and none is reset when one of them is not
// this cluster's node (a host that cannot be reached is reported and left alone, the others
// are reset) — another kubeforge cluster's, or a kubeadm cluster kubeforge did not set
// up: a Cluster file naming the wrong hosts must not wipe someone else's cluster (k0sctl asks
// before a reset; kubeforge, run in CI, refuses instead). The whole etcd cluster goes away with
// its data directories, so reset's remove-etcd-member phase cleans the data directory without
// removing the member: removing members one by one only shrinks a cluster that is deleted
// anyway, and once one control plane is down etcd refuses every removal that would leave the
// rest without a quorum of started members ("etcdserver: unhealthy cluster"), which kubeadm's
// reset retries for minutes per node.

export interface DownRequest {
  spec: ClusterSpec;
  connect: (node: ClusterNodeSpec) => Promise<Host>;
  reporter: Reporter;
  dryRun: boolean;
}

export async function down(req: DownRequest): Promise<void> {
  const { reporter } = req;
  // Docker nodes are not reset: their containers, volumes and network go whole, at the end.
  const spec = { ...req.spec, nodes: req.spec.nodes.filter((n) => !isDockerNode(n)) };
  const hosts = new Map<string, Host>();
  try {
    // A host that cannot be reached or read is left as it is, and reported; the others are
    // still reset (a CI teardown after a failure must not keep every VM because one is gone).
    const conditions = new Map<string, NodeCondition>();
    const unchecked = await failuresOf(
      fleet(
        spec.nodes,
        (n) => n.name,
        async (node) => {
          const host = await req.connect(node);
          hosts.set(node.name, host);
          const condition = await nodeCondition(host, {
            cluster: spec.name,
            node: node.name,
            role: node.role,
          });
          conditions.set(node.name, condition);
        },
        { concurrency: spec.concurrency },
      ),
    );
    const foreign = spec.nodes.flatMap((node) => {
      const c = conditions.get(node.name);
      return c?.kind === "foreign" ? [` - ${node.name}: ${c.reason}`] : [];
    });
    if (foreign.length > 0) {
      throw new Error(
        `not tearing down the cluster "${spec.name}": ${foreign.length} of ${spec.nodes.length} hosts ${foreign.length === 1 ? "is not its node" : "are not its nodes"}; nothing was reset:\n${foreign.join("\n")}`,
      );
    }
    const checked = spec.nodes.filter((n) => conditions.has(n.name));
    const notReset = await failuresOf(
      fleet(
        checked,
        (n) => n.name,
        (node) =>
          resetNode(hosts.get(node.name)!, hostReporter(reporter, node.name), {
            dryRun: req.dryRun,
            removeEtcdMember: false,
          }),
        { concurrency: spec.concurrency },
      ),
    );
    await removeDockerNodes(req.spec, {
      dryRun: req.dryRun,
      log: (line) => reporter.info(`[down] ${line}`),
    });
    const failures = [
      ...unchecked.map(({ name, error }) => ({
        name,
        error: new Error(
          `left as it is: ${error instanceof Error ? error.message : String(error)}`,
          { cause: error },
        ),
      })),
      ...notReset,
    ];
    if (failures.length > 0) {
      const order = spec.nodes.map((n) => n.name);
      failures.sort((a, b) => order.indexOf(a.name) - order.indexOf(b.name));
      throw new FleetError(failures, spec.nodes.length);
    }
  } finally {
    await closeHosts(hosts.values());
  }
}
