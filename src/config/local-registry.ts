import { dump } from "js-yaml";
import { LABELS } from "./docker/network-plan.js";

// The local registry on the runner (Cluster `registry`), as data (pure): the distribution
// registry's configuration for the `docker-registry` program, and the Engine API body of the
// `registry:2` container kind's "Local Registry" recipe runs. Images are named by
// localhost:<port> on the runner and in pod specs alike; each node's containerd maps that name to
// the registry's address as the node reaches it (node/runtime/containerd-config.ts).

/** The image kind's recipe and k3d's `registry create` run (the distribution registry, v2). */
export const REGISTRY_IMAGE = "docker.io/library/registry:2";
/** The port the registry listens on inside its container (the image's EXPOSE). */
export const REGISTRY_CONTAINER_PORT = 5000;
/** The registry container's name on the cluster's network, which the nodes resolve. */
export const REGISTRY_NETWORK_ALIAS = "kubeforge-registry";

/** The name images carry: what the runner pushes to and pod specs name. */
export function registryHost(port: number): string {
  return `localhost:${port}`;
}

/** The container's engine-wide name: `_` keeps it apart from every node's (DNS names). */
export function registryContainerName(cluster: string): string {
  return `kubeforge-${cluster}_registry`;
}

export interface RegistryConfigInput {
  /** Where the blobs go (a folder of kubeforge's on the runner). */
  rootDirectory: string;
  /** The listen address, "127.0.0.1:5001" or ":5001" (every address). */
  addr: string;
}

/**
 * The distribution registry's config.yml (distribution docs/configuration.md, version 0.1):
 * filesystem storage, deletes allowed (a test's images can be cleaned), no auth, plain HTTP.
 */
export function registryConfig(i: RegistryConfigInput): string {
  return dump({
    version: 0.1,
    log: { level: "warn", fields: { service: "registry" } },
    storage: { filesystem: { rootdirectory: i.rootDirectory }, delete: { enabled: true } },
    http: { addr: i.addr, headers: { "X-Content-Type-Options": ["nosniff"] } },
  });
}

export interface RegistryContainerInput {
  cluster: string;
  port: number;
  /** The runner address the port is published on: 127.0.0.1, or 0.0.0.0 for SSH nodes. */
  hostIp: string;
  /** The cluster's network (docker nodes): the container joins it as REGISTRY_NETWORK_ALIAS. */
  network?: string;
}

/** POST /containers/create's body: `docker run -d --restart=always -p IP:PORT:5000 registry:2`. */
export function registryContainerBody(i: RegistryContainerInput): Record<string, unknown> {
  const exposed = `${REGISTRY_CONTAINER_PORT}/tcp`;
  return {
    Image: REGISTRY_IMAGE,
    // Labelled with the cluster, so that down and the post step remove it with the nodes.
    Labels: { [LABELS.cluster]: i.cluster, [LABELS.node]: "_registry" },
    ExposedPorts: { [exposed]: {} },
    HostConfig: {
      PortBindings: { [exposed]: [{ HostIp: i.hostIp, HostPort: String(i.port) }] },
      RestartPolicy: { Name: "always" },
      ...(i.network ? { NetworkMode: i.network } : {}),
    },
    ...(i.network
      ? {
          NetworkingConfig: {
            EndpointsConfig: { [i.network]: { Aliases: [REGISTRY_NETWORK_ALIAS] } },
          },
        }
      : {}),
  };
}
