import { isDeepStrictEqual } from "node:util";
import { formatGoDuration } from "../../config/duration.js";
import { parseYAMLDocuments } from "../../config/yaml.js";
import { apiErrorOf, isNotFound } from "../../kube/errors.js";
import { poll } from "../../kube/poll.js";
import type { KubeClient } from "../../kube/types.js";
import type { Logger } from "../../workflow/phase.js";
import type { StaticPodComponent, StaticPodPathManager } from "./paths.js";
import { renewCertsByComponent, type RenewalContext } from "./renew.js";
import { waitForPodsWithLabel, waitForStaticPodHashChange, type WaitOptions } from "./waits.js";

// Replacing one static Pod manifest (kubeadm: phases/upgrade/staticpods.go upgradeComponent and
// rollbackOldManifests): the component's backup path is recorded first, so a later failure
// rolls it back too; a component whose manifest would not change is skipped; otherwise its
// certificates are renewed, the old manifest moved to the backup folder, the new one moved in,
// and kubeadm waits for the mirror Pod's config.hash to change and the component's Pods to run.
// Any failure moves every recorded backup back (etcd's only when asked) and says so in kubeadm's
// words.

export interface ComponentUpgrade {
  client: KubeClient;
  nodeName: string;
  pathMgr: StaticPodPathManager;
  /** Set when certificates are renewed (--certificate-renewal, the default). */
  renewal: RenewalContext | undefined;
  wait: WaitOptions;
  log: Logger;
  /**
   * Another sign that the kubelet stopped a Pod whose manifest was taken away: needed for etcd
   * when other control planes answer the API, because this node's kubelet deletes its mirror
   * Pod through this node's own API server, which cannot write while this etcd is down.
   */
  stopped?: () => Promise<boolean>;
  /** Each component's ManifestFilesAreEqual, asked ahead; absent ones are asked at the turn. */
  same?: Map<StaticPodComponent, Promise<boolean>>;
  /** Told when a component's new manifest is in place: the wait for its restart begins. */
  restarting?: () => void;
}

/** Backup paths of the components this run touched, in the order it touched them. */
export type RecoverManifests = Map<StaticPodComponent, string>;

/** k8s.io/apimachinery utilerrors.NewAggregate(...).Error(): one message, or "[a, b]". */
export function aggregateMessage(errors: readonly unknown[]): string {
  const seen: string[] = [];
  for (const e of errors) {
    const msg = e instanceof Error ? e.message : String(e);
    if (!seen.includes(msg)) seen.push(msg);
  }
  return seen.length === 1 ? seen[0]! : `[${seen.join(", ")}]`;
}

/** staticpod.ManifestFilesAreEqual: the two files decode to the same Pod. */
export async function manifestFilesAreEqual(
  pathMgr: StaticPodPathManager,
  a: string,
  b: string,
): Promise<boolean> {
  const read = async (p: string) =>
    parseYAMLDocuments((await pathMgr.host.readFile(p)).toString("utf8"), p)[0];
  const [left, right] = await Promise.all([read(a), read(b)]);
  return isDeepStrictEqual(left, right);
}

/**
 * rollbackOldManifests: every recorded backup moved back (etcd's only with `restoreEtcd`);
 * always throws, with kubeadm's message and every error met on the way.
 */
export async function rollbackOldManifests(
  pathMgr: StaticPodPathManager,
  recover: RecoverManifests,
  origErr: unknown,
  restoreEtcd: boolean,
): Promise<never> {
  const errors: unknown[] = [origErr];
  for (const [component, backupPath] of recover) {
    if (component === "etcd" && !restoreEtcd) continue;
    try {
      await pathMgr.moveFile(backupPath, pathMgr.realManifestPath(component));
    } catch (e) {
      errors.push(e);
    }
  }
  throw new Error(
    `couldn't upgrade control plane. kubeadm has tried to recover everything into the earlier state. Errors faced: ${aggregateMessage(errors)}`,
    { cause: origErr },
  );
}

/**
 * kubeadm's restart of an unchanged etcd manifest (since v1.31): the manifest stays out of the
 * manifest folder until the kubelet has stopped the Pod — its mirror Pod is gone, the API
 * server this node's clients reach stops answering because its etcd stopped, or (`stopped`)
 * the member itself stops answering — and then comes
 * back unchanged. The mechanism kubeadm uses was not readable in its sources; the file written
 * is kubeadm's (the same manifest).
 */
async function waitForStaticPodStopped(up: ComponentUpgrade, component: StaticPodComponent) {
  await poll(
    async () => {
      if (await up.stopped?.()) return true;
      try {
        await up.client.get({
          apiVersion: "v1",
          kind: "Pod",
          namespace: "kube-system",
          name: `${component}-${up.nodeName}`,
        });
        return undefined;
      } catch (e) {
        // Gone, or the API is down with it (no answer, or a 5xx while its etcd is away):
        // either way the kubelet has acted on the removal.
        const code = apiErrorOf(e)?.code;
        return isNotFound(e) || code === 0 || (code ?? 0) >= 500 ? true : undefined;
      }
    },
    { ...up.wait, what: `the kubelet to stop the static Pod ${component}-${up.nodeName}` },
  );
}

async function moveManifests(
  up: ComponentUpgrade,
  component: StaticPodComponent,
  recover: RecoverManifests,
  restart: boolean,
): Promise<void> {
  const { pathMgr } = up;
  const current = pathMgr.realManifestPath(component);
  const backup = pathMgr.backupManifestPath(component);
  const recoverEtcd = component === "etcd";
  try {
    if (restart) {
      await pathMgr.moveFile(current, backup);
      up.log.info(
        `[upgrade/staticpods] Restarting the ${component} static pod and backing up its manifest to "${backup}"`,
      );
      await waitForStaticPodStopped(up, component);
      await pathMgr.moveFile(pathMgr.tempManifestPath(component), current);
    } else {
      // The old manifest to the backup, then the new one in its place: one command on the host.
      await pathMgr.moveFiles([
        [current, backup],
        [pathMgr.tempManifestPath(component), current],
      ]);
    }
  } catch (e) {
    return rollbackOldManifests(pathMgr, recover, e, recoverEtcd);
  }
  if (!restart) {
    up.log.info(
      `[upgrade/staticpods] Moving new manifest to "${current}" and backing up old manifest to "${backup}"`,
    );
  }
}

/**
 * upgradeComponent. `restartIfEqual`: etcd whose manifest does not change while the API
 * server's does (and certificates are renewed) is still renewed and restarted
 * (kubernetes/kubernetes#124688, v1.31).
 */
export async function upgradeComponent(
  up: ComponentUpgrade,
  component: StaticPodComponent,
  beforePodHash: string,
  recover: RecoverManifests,
  opts: { restartIfEqual?: boolean } = {},
): Promise<void> {
  const { pathMgr, log } = up;
  const recoverEtcd = component === "etcd";
  log.info(`[upgrade/staticpods] Preparing for "${component}" upgrade`);
  const current = pathMgr.realManifestPath(component);
  recover.set(component, pathMgr.backupManifestPath(component));
  const equal = await (up.same?.get(component) ??
    manifestFilesAreEqual(pathMgr, current, pathMgr.tempManifestPath(component)));
  const restart = equal && opts.restartIfEqual === true;
  if (equal && !restart) {
    log.info(
      `[upgrade/staticpods] Current and new manifests of ${component} are equal, skipping upgrade`,
    );
    return;
  }
  if (up.renewal) {
    try {
      await renewCertsByComponent(up.renewal, component, (l) => log.info(l));
    } catch (e) {
      const err = new Error(
        `failed to renew certificates for component "${component}": ${(e as Error).message}`,
        { cause: e },
      );
      return rollbackOldManifests(pathMgr, recover, err, recoverEtcd);
    }
  }
  await moveManifests(up, component, recover, restart);
  up.restarting?.();
  log.info("[upgrade/staticpods] Waiting for the kubelet to restart the component");
  log.info(`[upgrade/staticpods] This can take up to ${formatGoDuration(up.wait.timeoutMs)}`);
  try {
    if (!restart) {
      await waitForStaticPodHashChange(up.client, up.nodeName, component, beforePodHash, up.wait);
    }
    await waitForPodsWithLabel(up.client, `component=${component}`, up.wait, (l) => log.info(l));
  } catch (e) {
    return rollbackOldManifests(pathMgr, recover, e, recoverEtcd);
  }
  log.info(`[upgrade/staticpods] Component "${component}" upgraded successfully!`);
}
