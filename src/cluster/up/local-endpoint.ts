import { joinHostPort } from "../../config/network.js";
import {
  APISERVER_PROXY_PORT,
  installApiServerProxy,
  proxyListenAddress,
  type ApiServerBackend,
} from "../../node/apiserver-proxy.js";
import { fleet } from "../../remote/fleet.js";
import type { Host } from "../../remote/host.js";
import type { Reporter } from "../../workflow/reporter.js";

// Several control planes and no controlPlaneEndpoint of the user's: the cluster's endpoint is a
// proxy to every API server on every node's loopback (node/apiserver-proxy.ts; kubespray's
// "localhost load balancing", k0s's node-local load balancing). kubeadm's controlPlaneEndpoint
// is that loopback address, so everything kubeadm derives from it — cluster-info, admin.conf on
// every control plane, the kubelet.conf of workers, kube-proxy's kubeconfig — reaches whichever
// API server is up, and kubeadm adds the address to the API server certificate. The proxies are
// installed on every node before init, so discovery and the TLS bootstrap of joining nodes go
// through them too (kubeforge reaches a node's loopback through the node: remote/route.ts).

/** The controlPlaneEndpoint of a cluster whose endpoint is the node-local proxies. */
export function localEndpoint(backends: readonly ApiServerBackend[]): string {
  return joinHostPort(proxyListenAddress(backends), APISERVER_PROXY_PORT);
}

export interface LocalEndpointNode {
  name: string;
  host: Host;
}

/** Installs (or confirms) the proxy on every node, in parallel. */
export async function installLocalEndpoint(
  nodes: readonly LocalEndpointNode[],
  backends: readonly ApiServerBackend[],
  opts: { reporter: (node: string) => Reporter; concurrency: number; allowInstall: boolean },
): Promise<void> {
  await fleet(
    nodes,
    (n) => n.name,
    async (n) => {
      const log = (m: string) => opts.reporter(n.name).info(m);
      const { changed } = await installApiServerProxy(n.host, backends, {
        allowInstall: opts.allowInstall,
        log,
      });
      if (!changed) log("[apiserver-proxy] the node-local API server proxy is in place");
    },
    { concurrency: opts.concurrency },
  );
}
