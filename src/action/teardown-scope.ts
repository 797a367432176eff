import { parseHostURL } from "../config/cluster/host-url.js";
import type { ClusterNodeSpec } from "../config/cluster/types.js";
import type { Teardown } from "./inputs.js";

// Which nodes the post step tears down. `auto` takes the remote nodes (SSH hosts, containers on
// the runner's Docker) and leaves the runner itself: a GitHub-hosted runner is thrown away after
// the job anyway. A self-hosted runner is not: the next job would find this one's kubelet, static
// pods and etcd running, so `auto` resets it too. The runner says which it is in
// RUNNER_ENVIRONMENT ("github-hosted" or "self-hosted"; docs.github.com, "Variables reference":
// "The environment of the runner executing the job"); a runner that does not say (older than
// that variable, or no runner at all) is left alone, as before.

const isRemote = (node: ClusterNodeSpec) => {
  const url = parseHostURL(node.host);
  return !("problem" in url) && (url.type === "ssh" || url.type === "docker");
};

export function selfHostedRunner(env: NodeJS.ProcessEnv): boolean {
  const kind = env.RUNNER_ENVIRONMENT?.trim();
  return kind !== undefined && kind !== "" && kind !== "github-hosted";
}

/** The nodes the `teardown` input covers, and the ones it keeps. */
export function teardownScope(
  nodes: readonly ClusterNodeSpec[],
  teardown: Teardown,
  env: NodeJS.ProcessEnv,
): { covered: ClusterNodeSpec[]; kept: ClusterNodeSpec[] } {
  if (teardown === "never") return { covered: [], kept: [...nodes] };
  const all = teardown === "always" || selfHostedRunner(env);
  const covered = nodes.filter((n) => all || isRemote(n));
  return { covered, kept: nodes.filter((n) => !covered.includes(n)) };
}
