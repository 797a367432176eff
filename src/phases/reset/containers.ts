import { lookPath, type LookupOptions } from "../../node/lookpath.js";
import { CommandError, type Host } from "../../remote/host.js";

// Removing every pod sandbox (and so every container) of the node's container runtime, as
// kubeadm's removeContainers does (cmd/phases/reset/cleanupnode.go with util/runtime
// ListKubeContainers and RemoveContainers, v1.35): list all pod sandboxes, then for each one stop
// it and remove it, each pair tried up to RemoveContainerRetry (5) times, failures collected.
// kubeadm ≥ 1.28 talks to the CRI socket directly; kubeforge works over the Host port, so it
// uses crictl, exactly as kubeadm ≤ 1.27 did (`crictl pods -q`, `crictl stopp`, `crictl rmp`).
// Only standard output is read: crictl's debug and warning lines go to standard error.

/** kubeadm: constants.RemoveContainerRetry. */
export const REMOVE_CONTAINER_RETRY = 5;

const CRICTL_TIMEOUT_MS = 120_000;

/** Thrown when there is no crictl to talk to the runtime with. */
export class CrictlMissingError extends Error {
  constructor() {
    super(
      "crictl is not on the PATH: the containers of the container runtime cannot be removed; remove them with the runtime's own tools",
    );
    this.name = "CrictlMissingError";
  }
}

export interface RemovedContainers {
  /** Pod sandbox IDs the runtime listed. */
  sandboxes: string[];
}

/**
 * Stops and removes every pod sandbox of the runtime at `criSocket`. Throws CrictlMissingError
 * without crictl, or one error listing every sandbox that could not be removed.
 */
export async function removeKubernetesContainers(
  host: Host,
  criSocket: string,
  opts: LookupOptions = {},
): Promise<RemovedContainers> {
  const crictl = await lookPath(host, "crictl", opts);
  if (crictl === undefined) throw new CrictlMissingError();
  const base = [crictl, "--runtime-endpoint", criSocket];

  const listArgv = [...base, "pods", "-q"];
  const list = await host.exec(listArgv, {
    sudo: true,
    readOnly: true,
    timeoutMs: CRICTL_TIMEOUT_MS,
  });
  if (list.code !== 0) {
    throw new Error(
      `failed to list pod sandboxes: ${new CommandError(host.name, listArgv, list).message}`,
    );
  }
  const sandboxes = list.stdout.split(/\s+/).filter((id) => id !== "");

  const errors: string[] = [];
  for (const id of sandboxes) {
    let lastError: string | undefined;
    for (let attempt = 0; attempt < REMOVE_CONTAINER_RETRY; attempt++) {
      const stop = [...base, "stopp", id];
      const stopped = await host.exec(stop, { sudo: true, timeoutMs: CRICTL_TIMEOUT_MS });
      if (stopped.code !== 0) {
        lastError = `failed to stop running pod ${id}: ${new CommandError(host.name, stop, stopped).message}`;
        continue;
      }
      const remove = [...base, "rmp", id];
      const removed = await host.exec(remove, { sudo: true, timeoutMs: CRICTL_TIMEOUT_MS });
      if (removed.code !== 0) {
        lastError = `failed to remove pod ${id}: ${new CommandError(host.name, remove, removed).message}`;
        continue;
      }
      lastError = undefined;
      break;
    }
    if (lastError !== undefined) errors.push(lastError);
  }
  if (errors.length > 0)
    throw new Error(errors.length === 1 ? errors[0]! : `[${errors.join(", ")}]`);
  return { sandboxes };
}
