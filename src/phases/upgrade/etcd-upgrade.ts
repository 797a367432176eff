import { posix } from "node:path";
import { DEFAULT_ETCD_DATA_DIR } from "../../config/paths.js";
import { parseYAMLDocuments } from "../../config/yaml.js";
import { parseSemantic } from "../../config/upgrade-policy.js";
import semver from "semver";
import type { UpgradeData } from "./data.js";
import type { UpgradeEtcdCluster } from "./etcd-access.js";
import { copyTree } from "./paths.js";
import {
  rollbackOldManifests,
  upgradeComponent,
  type ComponentUpgrade,
  type RecoverManifests,
} from "./static-pods.js";
import { waitForStaticPodSingleHash } from "./waits.js";
import { etcdClientURL } from "../../manifests/etcd.js";

// The local etcd member's part of a static Pod upgrade (kubeadm: phases/upgrade/staticpods.go
// performEtcdStaticPodUpgrade, v1.30+: the current version is the image tag of the etcd.yaml on
// disk). Unhealthy etcd stops everything before any change; the data folder is copied aside;
// etcd is never downgraded; when the new member does not come up, the old manifest is put back
// and, if the old member does not come back either, the copied data too.

/** An error that, unlike the others, stops the whole upgrade (kubeadm's `fatal` result). */
export class FatalEtcdError extends Error {}

export interface EtcdUpgradeInput {
  up: ComponentUpgrade;
  data: UpgradeData;
  recover: RecoverManifests;
  oldEtcd: UpgradeEtcdCluster;
  /** Writes the new etcd.yaml into the temporary folder. */
  writeNewManifest: () => Promise<void>;
  /** The API server's manifest changes and certificates are renewed (the v1.31 restart rule). */
  restartIfEqual: boolean;
  /** backUpEtcdData, started by the caller as early as it could be. */
  backedUp: Promise<void>;
}

const dataDir = (data: UpgradeData) =>
  data.cfg.cluster.etcd.local?.dataDir || DEFAULT_ETCD_DATA_DIR;

/** convertImageTagMetadataToSemver: registries have no "+", kubernetes tags use "_". */
const tagToSemver = (tag: string) => tag.replace("_", "+");

/** GetEtcdImageTagFromStaticPod: the tag of etcd.yaml's image. */
async function currentEtcdVersion(input: EtcdUpgradeInput): Promise<string> {
  const path = input.up.pathMgr.realManifestPath("etcd");
  const pod = parseYAMLDocuments(
    (await input.data.host.readFile(path)).toString("utf8"),
    path,
  )[0] as {
    spec?: { containers?: { image?: string }[] };
  };
  const image = pod.spec?.containers?.[0]?.image ?? "";
  const tag = image.includes(":") ? image.slice(image.lastIndexOf(":") + 1) : "";
  return tagToSemver(tag);
}

/** The desired version: etcd.local.imageTag, else the one kubeadm deploys for the target. */
function desiredEtcdVersion(data: UpgradeData): string {
  return tagToSemver(data.cfg.cluster.etcd.local?.imageTag || data.release.etcdVersion);
}

/** rollbackEtcdData: the copied data folder's content back over the data folder. */
async function rollbackEtcdData(input: EtcdUpgradeInput): Promise<void> {
  const backup = posix.join(
    input.up.pathMgr.paths.backupEtcdDir,
    posix.basename(dataDir(input.data)),
  );
  try {
    await copyTree(input.data.host, backup, dataDir(input.data));
  } catch (e) {
    throw new FatalEtcdError(
      `fatal error rolling back local etcd cluster datadir: couldn't recover etcd database with error, the location of etcd backup: ${input.up.pathMgr.paths.backupEtcdDir}: ${(e as Error).message}, the backup of etcd database is stored here:(${input.up.pathMgr.paths.backupEtcdDir})`,
      { cause: e },
    );
  }
}

async function waitForPrevious(input: EtcdUpgradeInput): Promise<void> {
  const { log } = input.up;
  const { etcdRetries, etcdRetryIntervalMs } = input.data.timing;
  log.info("[upgrade/etcd] Waiting for previous etcd to become available");
  try {
    await input.oldEtcd.waitForClusterAvailable(etcdRetries, etcdRetryIntervalMs);
  } catch (e) {
    log.info(`[upgrade/etcd] Failed to healthcheck previous etcd: ${(e as Error).message}`);
    throw e;
  }
}

/** The manifest is back (upgradeComponent rolled it back); etcd must come back too. */
async function recoverAfterFailedUpgrade(input: EtcdUpgradeInput, err: unknown): Promise<never> {
  const { log } = input.up;
  const backup = input.up.pathMgr.paths.backupEtcdDir;
  log.info(`[upgrade/etcd] Failed to upgrade etcd: ${(err as Error).message}`);
  try {
    await waitForPrevious(input);
  } catch {
    log.info("[upgrade/etcd] Rolling back etcd data");
    await rollbackEtcdData(input);
    log.info("[upgrade/etcd] Etcd data rollback successful");
    try {
      await waitForPrevious(input);
    } catch (e) {
      throw new FatalEtcdError(
        `fatal error rolling back local etcd cluster manifest, the backup of etcd database is stored here:(${backup}): ${(e as Error).message}`,
        { cause: e },
      );
    }
  }
  log.info("[upgrade/etcd] Etcd was rolled back and is now available");
  throw new FatalEtcdError(
    `fatal error when trying to upgrade the etcd cluster, rolled the state back to pre-upgrade state: ${(err as Error).message}`,
    { cause: err },
  );
}

/** The new member is up but the cluster is not: data and manifest back, then the old member. */
async function recoverUnavailableCluster(input: EtcdUpgradeInput, err: unknown): Promise<never> {
  const { log, pathMgr } = input.up;
  const backup = pathMgr.paths.backupEtcdDir;
  log.info(`[upgrade/etcd] Failed to healthcheck etcd: ${(err as Error).message}`);
  log.info("[upgrade/etcd] Rolling back etcd data");
  await rollbackEtcdData(input);
  log.info("[upgrade/etcd] Etcd data rollback successful");
  log.info("[upgrade/etcd] Rolling back etcd manifest");
  await rollbackOldManifests(pathMgr, input.recover, err, true).catch(() => undefined);
  try {
    await waitForPrevious(input);
  } catch (e) {
    throw new FatalEtcdError(
      `fatal error rolling back local etcd cluster manifest, the backup of etcd database is stored here:(${backup}): ${(e as Error).message}`,
      { cause: e },
    );
  }
  log.info("[upgrade/etcd] Etcd was rolled back and is now available");
  throw new FatalEtcdError(
    `fatal error upgrading local etcd cluster, rolled the state back to pre-upgrade state: ${(err as Error).message}`,
    { cause: err },
  );
}

/**
 * The first steps of kubeadm's etcd upgrade: the cluster must be healthy, then the member's data
 * folder is copied to the backup folder. They only read etcd and fill the backup folder, so an
 * upgrade starts them before it renders the new manifests (kubeadm: after), and waits for them
 * where kubeadm runs them. `backupDir` exists (the path manager made it), so kubeadm's
 * `cp -r <dataDir> <backupDir>` puts the copy in `<backupDir>/<base name of dataDir>`.
 */
export async function backUpEtcdData(
  data: UpgradeData,
  oldEtcd: UpgradeEtcdCluster,
  backupDir: string,
): Promise<void> {
  try {
    await oldEtcd.checkClusterHealth();
  } catch (e) {
    throw new FatalEtcdError(`etcd cluster is not healthy: ${(e as Error).message}`, { cause: e });
  }
  const source = dataDir(data);
  try {
    await copyTree(data.host, source, posix.join(backupDir, posix.basename(source)));
  } catch (e) {
    throw new FatalEtcdError(`failed to back up etcd data: ${(e as Error).message}`, { cause: e });
  }
}

/** A promise's value or its error, so that it can run ahead and be taken later. */
const settle = <T>(p: Promise<T>): Promise<T | Error> => p.catch((e: unknown) => e as Error);

/** etcd is never downgraded; throws kubeadm's non-fatal error when it would be. */
function versionAllowsUpgrade(data: UpgradeData, current: string | Error): void {
  const desired = desiredEtcdVersion(data);
  if (current instanceof Error) throw current;
  const d = parseSemantic(desired);
  const c = parseSemantic(current);
  if (!d || !c) {
    throw new FatalEtcdError(
      `failed comparing the current etcd version "${current}" to the desired one "${desired}"`,
    );
  }
  if (semver.lt(d, c)) {
    throw new Error(
      `the desired etcd version "${desired}" is older than the currently installed "${current}". Skipping etcd upgrade`,
    );
  }
}

/**
 * performEtcdStaticPodUpgrade. Throws FatalEtcdError to stop the upgrade; any other error is
 * kubeadm's non-fatal issue (the caller reports it and goes on).
 */
export async function performEtcdStaticPodUpgrade(input: EtcdUpgradeInput): Promise<void> {
  const { data, up } = input;
  // Two steps of kubeadm's after the copy only read, or write into the temporary folder: they
  // run while the data is copied, and their outcomes are taken in kubeadm's order after it.
  const current = settle(currentEtcdVersion(input));
  const written = settle(input.writeNewManifest());
  await input.backedUp;
  versionAllowsUpgrade(data, await current);
  const before = await waitForStaticPodSingleHash(up.client, up.nodeName, "etcd", up.wait).catch(
    (e: unknown) => {
      throw new FatalEtcdError((e as Error).message, { cause: e });
    },
  );
  const write = await written;
  if (write instanceof Error) throw write;
  const member = etcdClientURL(data.cfg.init.localAPIEndpoint.advertiseAddress);
  // Two missed answers in a row: one timeout on a loaded node is not a stopped member.
  let misses = 0;
  const watched = {
    ...up,
    stopped: async () => {
      misses = (await input.oldEtcd.answers(member)) ? 0 : misses + 1;
      return misses >= 2;
    },
  };
  try {
    await upgradeComponent(watched, "etcd", before, input.recover, {
      restartIfEqual: input.restartIfEqual,
    });
  } catch (e) {
    return recoverAfterFailedUpgrade(input, e);
  }
  let fresh: UpgradeEtcdCluster;
  try {
    fresh = await data.etcd.connect(up.client);
  } catch (e) {
    throw new FatalEtcdError(`fatal error creating etcd client: ${(e as Error).message}`, {
      cause: e,
    });
  }
  up.log.info("[upgrade/etcd] Waiting for etcd to become available");
  try {
    await fresh.waitForClusterAvailable(data.timing.etcdRetries, data.timing.etcdRetryIntervalMs);
  } catch (e) {
    return recoverUnavailableCluster(input, e);
  }
}
