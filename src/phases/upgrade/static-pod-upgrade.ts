import { SUPER_ADMIN_KUBECONFIG, ADMIN_KUBECONFIG } from "../../config/paths.js";
import { CONTROL_PLANE_COMPONENTS } from "../../manifests/control-plane.js";
import { kubeconfigFile } from "../../pki/paths.js";
import { allOrFirstError } from "../../remote/fleet.js";
import type { PhaseContext } from "../../workflow/phase.js";
import type { UpgradeData } from "./data.js";
import type { UpgradeEtcdCluster } from "./etcd-access.js";
import { backUpEtcdData, FatalEtcdError, performEtcdStaticPodUpgrade } from "./etcd-upgrade.js";
import {
  renderControlPlaneManifests,
  renderEtcdManifest,
  upgradePatches,
  writeManifest,
  writeManifests,
} from "./manifests.js";
import {
  pathManagerForUpgrade,
  type StaticPodComponent,
  type StaticPodPathManager,
} from "./paths.js";
import { renewAhead, renewUsingLocalCA, type RenewalContext } from "./renew.js";
import {
  manifestFilesAreEqual,
  rollbackOldManifests,
  upgradeComponent,
  type ComponentUpgrade,
  type RecoverManifests,
} from "./static-pods.js";
import { waitForControlPlaneHashes } from "./waits.js";

// kubeadm's PerformStaticPodUpgrade / StaticPodControlPlane (phases/upgrade/staticpods.go,
// v1.31+ order as its logs show it): record the control-plane mirror Pods' hashes, write every
// new manifest into the temporary folder, upgrade local etcd first, then kube-apiserver,
// kube-controller-manager and kube-scheduler, renew admin.conf (and super-admin.conf where it
// exists), and remove the temporary folder — backups stay.

async function renewAdminKubeconfigs(
  data: UpgradeData,
  up: ComponentUpgrade,
  recover: RecoverManifests,
): Promise<void> {
  const renewal = up.renewal!;
  // Whether super-admin.conf exists is asked while admin.conf is renewed: it only reads.
  const superAdmin = data.host.exists(kubeconfigFile(SUPER_ADMIN_KUBECONFIG));
  superAdmin.catch(() => {}); // taken after admin.conf
  for (const file of [ADMIN_KUBECONFIG, SUPER_ADMIN_KUBECONFIG]) {
    if (file === SUPER_ADMIN_KUBECONFIG && !(await superAdmin)) break;
    let renewed: boolean;
    try {
      renewed = await renewUsingLocalCA(renewal, file);
    } catch (e) {
      const err = new Error(`failed to upgrade the ${file} certificates: ${(e as Error).message}`, {
        cause: e,
      });
      return rollbackOldManifests(up.pathMgr, recover, err, false);
    }
    if (!renewed) {
      up.log.info(
        `[upgrade/staticpods] External CA detected, ${file} certificate can't be renewed`,
      );
    }
  }
}

async function upgradeEtcd(
  data: UpgradeData,
  ctx: PhaseContext,
  up: ComponentUpgrade,
  recover: RecoverManifests,
  oldEtcd: UpgradeEtcdCluster,
  apiServerChanges: boolean,
  backedUp: Promise<void>,
  written: Promise<void>,
): Promise<void> {
  try {
    await performEtcdStaticPodUpgrade({
      up,
      data,
      recover,
      oldEtcd,
      backedUp,
      restartIfEqual: apiServerChanges && data.renewCerts,
      writeNewManifest: () => written,
    });
  } catch (e) {
    if (e instanceof FatalEtcdError) throw e;
    ctx.log.info(
      `[upgrade/etcd] Non fatal issue encountered during upgrade: ${(e as Error).message}`,
    );
  }
}

/** Whether each component's new manifest decodes to the one in use, each asked once. */
export type SameManifests = Map<StaticPodComponent, Promise<boolean>>;

/**
 * Whether `component`'s new manifest (once `written`) equals the one in use, asked now: both
 * files stay as they are until its turn, where kubeadm asks (ManifestFilesAreEqual), so the
 * answer is the same; a failure is taken there too.
 */
function compareAhead(
  same: SameManifests,
  pathMgr: StaticPodPathManager,
  component: StaticPodComponent,
  written: Promise<void>,
): void {
  const answer = written.then(() =>
    manifestFilesAreEqual(
      pathMgr,
      pathMgr.realManifestPath(component),
      pathMgr.tempManifestPath(component),
    ),
  );
  answer.catch(() => {}); // taken at the component's turn
  same.set(component, answer);
}

/**
 * The three control-plane manifests rendered into the temporary folder; whether the API
 * server's differs from the one in use. With `etcd`, etcd's too, which kubeadm writes at etcd's
 * turn: the folder is this run's alone, so it is written beside them (its lines printed in the
 * same order) and its outcome taken at etcd's turn. Each new manifest is compared with the one
 * in use as soon as it is written (`same`).
 */
async function writeNewManifests(
  data: UpgradeData,
  ctx: PhaseContext,
  pathMgr: StaticPodPathManager,
  etcd: boolean,
  same: SameManifests,
): Promise<{ apiServerChanges: boolean; etcdWritten: Promise<void> | undefined }> {
  const dir = pathMgr.paths.tempManifestDir;
  ctx.log.info(`[upgrade/staticpods] Writing new Static Pod manifests to "${dir}"`);
  const patches = await upgradePatches(data, ctx);
  const manifests = await renderControlPlaneManifests(data, ctx, patches);
  const etcdWritten = etcd
    ? (async () => {
        await writeManifest(data, dir, "etcd", renderEtcdManifest(data, ctx, patches));
      })()
    : undefined;
  etcdWritten?.catch(() => {}); // taken at etcd's turn
  if (etcdWritten) compareAhead(same, pathMgr, "etcd", etcdWritten);
  try {
    // Files in a folder of their own: written in one go.
    const written = writeManifests(data, dir, manifests);
    written.catch(() => {}); // thrown below
    for (const c of CONTROL_PLANE_COMPONENTS) compareAhead(same, pathMgr, c, written);
    await written;
    return { apiServerChanges: !(await same.get("kube-apiserver")!), etcdWritten };
  } catch (e) {
    await etcdWritten?.catch(() => {});
    throw e;
  }
}

/** PerformStaticPodUpgrade for this node. */
export async function performStaticPodUpgrade(data: UpgradeData, ctx: PhaseContext): Promise<void> {
  const client = await data.client();
  const nodeName = data.cfg.init.nodeRegistration.name;
  const wait = {
    timeoutMs: data.timing.upgradeManifestsMs,
    intervalMs: data.timing.pollIntervalMs,
  };
  const external = data.cfg.cluster.etcd.external !== undefined;
  // kubeadm makes its folders, reads the control plane's hashes, then connects to etcd: none of
  // them reads another's result, so they run at once (the first failure in that order thrown).
  const [pathMgr, before, oldEtcd] = await allOrFirstError([
    pathManagerForUpgrade(data.host, data.now(), {
      etcdUpgrade: data.etcdUpgrade,
      externalEtcd: external,
    }),
    waitForControlPlaneHashes(client, nodeName, wait),
    external ? Promise.resolve(undefined) : data.etcd.connect(client),
  ]);
  const renewal: RenewalContext | undefined = data.renewCerts
    ? { host: data.host, cfg: data.cfg, release: data.release, keys: data.keys, now: data.now() }
    : undefined;
  const etcdBackedUp =
    oldEtcd && data.etcdUpgrade
      ? backUpEtcdData(data, oldEtcd, pathMgr.paths.backupEtcdDir)
      : undefined;
  etcdBackedUp?.catch(() => {}); // taken at etcd's turn
  const renewLater = renewal ? renewAhead(renewal, etcdBackedUp !== undefined) : () => {};
  const same: SameManifests = new Map();
  const up: ComponentUpgrade = {
    client,
    nodeName,
    pathMgr,
    renewal,
    wait,
    log: ctx.log,
    same,
    restarting: renewLater,
  };
  const recover: RecoverManifests = new Map();

  // A failure before etcd's turn first lets the copy it started finish: none is left half-made.
  const written = await writeNewManifests(
    data,
    ctx,
    pathMgr,
    etcdBackedUp !== undefined,
    same,
  ).catch(async (e: unknown) => {
    await etcdBackedUp?.catch(() => {});
    throw e;
  });
  if (oldEtcd && etcdBackedUp && written.etcdWritten) {
    await upgradeEtcd(
      data,
      ctx,
      up,
      recover,
      oldEtcd,
      written.apiServerChanges,
      etcdBackedUp,
      written.etcdWritten,
    );
  }
  renewLater(); // when etcd's turn ended without restarting it
  for (const component of CONTROL_PLANE_COMPONENTS) {
    await upgradeComponent(up, component, before.get(component) ?? "", recover);
  }
  if (renewal) await renewAdminKubeconfigs(data, up, recover);
  await pathMgr.cleanupDirs();
}

/** DryRunStaticPodUpgrade: the three control-plane manifests, rendered where they would go. */
export async function dryRunStaticPodUpgrade(data: UpgradeData, ctx: PhaseContext): Promise<void> {
  const manifests = await renderControlPlaneManifests(data, ctx, await upgradePatches(data, ctx));
  for (const [component, text] of manifests) {
    const path = await writeManifest(data, "/etc/kubernetes/manifests", component, text);
    ctx.log.info(`[dryrun] Would write file "${path}"`);
  }
}
