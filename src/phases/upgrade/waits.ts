import { formatGoDuration } from "../../config/duration.js";
import { poll, PollTimeoutError } from "../../kube/poll.js";
import type { KubeClient, KubeObject } from "../../kube/types.js";
import type { StaticPodComponent } from "./paths.js";

// kubeadm's KubeWaiter as the static Pod upgrade uses it (util/apiclient/wait.go):
// the kubelet's hash of a static Pod manifest is the mirror Pod's kubernetes.io/config.hash
// annotation (kubeadm reads that annotation rather than hashing the mirror Pod, whose status
// changes: kubernetes/kubernetes#61942); a replaced manifest has taken effect once that hash
// differs from the one recorded before, and the component is up once every Pod with its
// `component` label is Running.

export const CONFIG_HASH_ANNOTATION = "kubernetes.io/config.hash";

export interface WaitOptions {
  timeoutMs: number;
  intervalMs: number;
}

/** getStaticPodSingleHash: the mirror Pod `<component>-<node>` in kube-system and its hash. */
export async function staticPodHash(
  client: KubeClient,
  nodeName: string,
  component: StaticPodComponent,
): Promise<string> {
  let pod: KubeObject;
  try {
    pod = await client.get({
      apiVersion: "v1",
      kind: "Pod",
      namespace: "kube-system",
      name: `${component}-${nodeName}`,
    });
  } catch (e) {
    throw new Error(
      `failed to obtain static Pod hash for component ${component} on Node ${nodeName}: ${(e as Error).message}`,
      { cause: e },
    );
  }
  return pod.metadata.annotations?.[CONFIG_HASH_ANNOTATION] ?? "";
}

/** WaitForStaticPodSingleHash: the hash, retried until it can be read. */
export async function waitForStaticPodSingleHash(
  client: KubeClient,
  nodeName: string,
  component: StaticPodComponent,
  opts: WaitOptions,
): Promise<string> {
  try {
    return await poll(() => staticPodHash(client, nodeName, component), {
      ...opts,
      what: `the static Pod hash of ${component} on Node ${nodeName}`,
    });
  } catch (e) {
    throw e instanceof PollTimeoutError && e.lastError instanceof Error ? e.lastError : e;
  }
}

/** WaitForStaticPodControlPlaneHashes: the three control-plane components' hashes. */
export async function waitForControlPlaneHashes(
  client: KubeClient,
  nodeName: string,
  opts: WaitOptions,
): Promise<Map<StaticPodComponent, string>> {
  const hashes = new Map<StaticPodComponent, string>();
  for (const c of ["kube-apiserver", "kube-controller-manager", "kube-scheduler"] as const) {
    hashes.set(c, await waitForStaticPodSingleHash(client, nodeName, c, opts));
  }
  return hashes;
}

/**
 * WaitForStaticPodHashChange: until the hash differs from `previous`. A timeout is kubeadm's
 * "static Pod hash for component X on Node N did not change after <timeout>", unless the last
 * read failed, whose error is returned instead.
 */
export async function waitForStaticPodHashChange(
  client: KubeClient,
  nodeName: string,
  component: StaticPodComponent,
  previous: string,
  opts: WaitOptions,
): Promise<void> {
  let lastError: Error | undefined;
  try {
    await poll(
      async () => {
        let hash: string;
        try {
          hash = await staticPodHash(client, nodeName, component);
        } catch (e) {
          lastError = e as Error;
          return undefined;
        }
        lastError = undefined;
        return hash === previous ? undefined : true;
      },
      { ...opts, what: `the static Pod hash of ${component} to change` },
    );
  } catch (e) {
    if (!(e instanceof PollTimeoutError)) throw e;
    if (lastError) throw lastError;
    throw new Error(
      `static Pod hash for component ${component} on Node ${nodeName} did not change after ${formatGoDuration(opts.timeoutMs)}: context deadline exceeded`,
      { cause: e },
    );
  }
}

/**
 * WaitForPodsWithLabel: until the kube-system Pods with the label exist and are all Running,
 * printing "[apiclient] Found N Pods for label selector L" whenever N changes.
 */
export async function waitForPodsWithLabel(
  client: KubeClient,
  label: string,
  opts: WaitOptions,
  log: (line: string) => void,
): Promise<void> {
  let lastCount = -1;
  try {
    await poll(
      async () => {
        let pods: KubeObject[];
        try {
          pods = await client.list("v1", "Pod", { namespace: "kube-system", labelSelector: label });
        } catch (e) {
          log(
            `[apiclient] Error getting Pods with label selector "${label}" [${(e as Error).message}]`,
          );
          return undefined;
        }
        if (pods.length !== lastCount) {
          log(`[apiclient] Found ${pods.length} Pods for label selector ${label}`);
          lastCount = pods.length;
        }
        if (pods.length === 0) return undefined;
        const running = pods.every(
          (p) => (p.status as { phase?: string } | undefined)?.phase === "Running",
        );
        return running ? true : undefined;
      },
      { ...opts, what: `the Pods with label ${label} to be Running` },
    );
  } catch (e) {
    if (!(e instanceof PollTimeoutError)) throw e;
    throw new Error(
      `timed out after ${formatGoDuration(opts.timeoutMs)} waiting for the Pods with label ${label} to be Running: context deadline exceeded`,
      { cause: e },
    );
  }
}
