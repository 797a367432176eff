import { createServer, type AddressInfo, type Socket } from "node:net";

// A registry that accepts connections and never answers: every pull from it stalls (the
// simulated crictl contacts registries given by address, as containerd's resolver does).

export interface StallingRegistry {
  /** An image repository on it: `<address>:<port>/k8s`. */
  repository: string;
  /** A shell command listing the `crictl pull`s from it running on a host (nothing when none). */
  pullsCommand: string;
  /** Connections it holds (pulls that reached it). */
  readonly connections: number;
  close(): Promise<void>;
}

export async function startStallingRegistry(address: string): Promise<StallingRegistry> {
  const stalled = new Set<Socket>();
  const server = createServer((socket) => {
    stalled.add(socket);
    socket.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  const { port } = server.address() as AddressInfo;
  const repository = `${address}:${port}/k8s`;
  return {
    repository,
    pullsCommand: `pgrep -af '[c]rictl.* pull ${repository}/' || true`,
    get connections() {
      return stalled.size;
    },
    async close() {
      for (const socket of stalled) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A kubeadm ClusterConfiguration document that takes the images from `repository`. */
export function imageRepositoryDocument(repository: string): string {
  return [
    "apiVersion: kubeadm.k8s.io/v1beta4",
    "kind: ClusterConfiguration",
    `imageRepository: "${repository}"`,
    "",
  ].join("\n");
}
