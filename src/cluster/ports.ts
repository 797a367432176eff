import { readFile } from "node:fs/promises";
import type { ClusterNodeSpec, ClusterSpec } from "../config/cluster/types.js";
import type { Host } from "../remote/host.js";
import { tracedHost } from "../remote/trace.js";
import type { Reporter } from "../workflow/reporter.js";
import { connectNode, runnerAddresses } from "./connect.js";
import { publishedApiServerOf } from "./docker-nodes.js";
import { resetNode } from "./reset-node.js";
import type { RunnerServerInput } from "./runner-server.js";
import { startTunnelProcess, type TunnelTargetSpec } from "./tunnel.js";

// What a cluster workflow (`up`, `down`, later `upgrade`) needs from the world outside the
// hosts' phases: how to open a host, reset one, name it from the runner, reach the API servers
// from the runner, and fetch release labels. Built in one place for both edges (the CLI and the
// action), which differ only in where the tunnel's files live and what they record.

export interface ClusterPorts {
  /** Opens the node's host: SSH, this machine for `local`, a running container for `docker`. */
  connect: (node: ClusterNodeSpec) => Promise<Host>;
  /**
   * Creates (or starts) a `docker` node's container and opens it. Absent: docker nodes must
   * run already (a dry run, `down`).
   */
  createContainer?: (node: ClusterNodeSpec) => Promise<Host>;
  /** Resets a half-done host so init or join can run again (kubeforge reset --force). */
  reset: (host: Host, reporter: Reporter) => Promise<void>;
  /** The runner's names for a node (its ssh URL's host), tried first and added to the SANs. */
  runnerAddresses: (node: ClusterNodeSpec) => string[];
  /**
   * Starts the runner-side tunnel (cluster/tunnel.ts) to these API server targets and returns
   * its loopback port. Absent: an API server the runner cannot reach is an error.
   */
  tunnel?: (targets: TunnelTargetSpec[]) => Promise<{ port: number }>;
  /** Where a docker control plane's API server is published on the runner (docker-nodes.ts). */
  publishedApiServer?: RunnerServerInput["publishedApiServer"];
  /** Where the local registry (cluster/local-registry.ts) records its process or container. */
  registryStateFile?: string;
  /** How release labels are fetched (node/release-version.ts). */
  fetch: typeof fetch;
  /** The environment kubeforge runs in: proxy variables, KUBEFORGE_RELEASE_BASE_URL, SSH_AUTH_SOCK. */
  env: NodeJS.ProcessEnv;
}

export interface ClusterPortsOptions {
  spec: ClusterSpec;
  reporter: Reporter;
  env: NodeJS.ProcessEnv;
  /** The bundled CLI the detached tunnel process runs (`kubeforge tunnel`). */
  cliPath: string;
  /** Where the tunnel keeps its pid (next to admin.conf, or in the action's state folder). */
  tunnelStateFile: string;
  /** Where the local registry keeps its state (next to the tunnel's). */
  registryStateFile?: string;
  /** Wraps connect, e.g. to record which hosts were reached (the action's post step needs it). */
  trackConnect?: (
    connect: (node: ClusterNodeSpec) => Promise<Host>,
  ) => (node: ClusterNodeSpec) => Promise<Host>;
  /** Debug logs: every host's commands and file writes (remote/trace.ts), one line each. */
  trace?: (line: string) => void;
}

export function clusterPorts(o: ClusterPortsOptions): ClusterPorts {
  const opener = (docker: "create" | "existing") => {
    const open = async (node: ClusterNodeSpec) => {
      const host = await connectNode(o.spec, node, {
        readFile: (p) => readFile(p),
        env: o.env,
        log: (line) => o.reporter.info(line),
        docker,
      });
      const { trace } = o;
      return trace ? tracedHost(host, (line) => trace(`${node.name}: ${line}`)) : host;
    };
    return o.trackConnect ? o.trackConnect(open) : open;
  };
  return {
    connect: opener("existing"),
    createContainer: opener("create"),
    publishedApiServer: publishedApiServerOf(o.spec),
    reset: (host, reporter) => resetNode(host, reporter),
    runnerAddresses,
    tunnel: (targets) =>
      startTunnelProcess(
        { cluster: o.spec, targets },
        { cliPath: o.cliPath, stateFile: o.tunnelStateFile, env: o.env },
      ),
    ...(o.registryStateFile !== undefined ? { registryStateFile: o.registryStateFile } : {}),
    fetch: globalThis.fetch,
    env: o.env,
  };
}
