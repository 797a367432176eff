import { posix } from "node:path";
import {
  ADMIN_KUBECONFIG,
  CONTROLLER_MANAGER_KUBECONFIG,
  DEFAULT_CERTIFICATES_DIR,
  KUBELET_KUBECONFIG,
  KUBERNETES_DIR,
  MANIFESTS_DIR,
  SCHEDULER_KUBECONFIG,
  SUPER_ADMIN_KUBECONFIG,
} from "../../config/paths.js";
import { getInitSystem } from "../../node/init-system.js";
import type { LookupOptions } from "../../node/lookpath.js";
import {
  APISERVER_PROXY_SOCKET,
  APISERVER_PROXY_UNIT,
  APISERVER_PROXY_UNIT_PATH,
} from "../../node/apiserver-proxy.js";
import { BRIDGE_NAME, CNI_CONFIG_DIR } from "../../node/cni/bridge.js";
import type { Host } from "../../remote/host.js";
import type { Logger, Phase } from "../../workflow/phase.js";
import { cleanDir, goList, isDirEmpty, messageOf } from "./clean.js";
import { removeKubernetesContainers } from "./containers.js";
import type { ResetData } from "./data.js";
import { KUBELET_RUN_DIR, resolveKubeletDir, unmountUnder } from "./unmount.js";
import { tell, type ResetWording } from "./wording.js";

// kubeadm's cleanup-node phase (cmd/phases/reset/cleanupnode.go, v1.35), in its order: stop the
// kubelet; unmount what is mounted below /var/lib/kubelet (a failure stops the reset); remove
// every pod sandbox of the container runtime (a failure is a warning); delete the contents of
// /etc/kubernetes/manifests, /var/lib/kubelet (only when its mounts are gone) and the
// certificates directory (and /etc/kubernetes/tmp with --cleanup-tmp-dir); delete the kubeconfig
// files kubeadm writes, super-admin.conf (1.29+) included. Failures to delete are warnings.
// (kubeadm also removes the users of the RootlessControlPlane feature gate, which kubeforge
// does not create.)
//
// Then what kubeforge adds so that a host ends clean enough for a fresh `kubeforge up`
// (issue 5), each something kubeadm tells the user to do by hand or that kubeforge itself made:
// - the etcd data directory once more: etcd may have written to it until its container stopped;
// - CNI configuration (/etc/cni/net.d) and the CNI plugins' state (/var/lib/cni: host-local
//   IP allocations, cached results; kubeadm ≤ 1.24 cleaned it too), so the next cluster's
//   network is not the old one's;
// - the bridge kubeforge's built-in pod network created (it keeps the old pod CIDR's address,
//   which the bridge plugin refuses to change);
// - kubeforge's node-local API server proxy unit (kubeforge-apiserver-proxy.service), stopped;
// - kubeforge's own state (/etc/kubeforge, /var/lib/kubeforge: the node marker, the node-local
//   API proxy's configuration).
// Left alone on purpose: the kubelet's installation (binary, unit and its 10-kubeadm.conf
// drop-in — reset reverts init and join, not the installation, and a fresh `up` needs them),
// iptables/nftables/IPVS rules (shared with the host's own firewall), $HOME/.kube/config.

/** kubeadm: constants.KubeletBootstrapKubeConfigFileName. */
const BOOTSTRAP_KUBELET_KUBECONFIG = "bootstrap-kubelet.conf";
/** kubeadm: constants.TempDir under KubernetesDir. */
export const KUBERNETES_TMP_DIR = posix.join(KUBERNETES_DIR, "tmp");
/** The CNI plugins' state (host-local IPAM, result cache). */
export const CNI_STATE_DIR = "/var/lib/cni";
/** Folders only kubeforge writes. */
export const KUBEFORGE_DIRS = ["/etc/kubeforge", "/var/lib/kubeforge"];

/** kubeadm's filesToClean, in its order. */
export const KUBECONFIG_FILES_TO_DELETE = [
  ADMIN_KUBECONFIG,
  SUPER_ADMIN_KUBECONFIG,
  KUBELET_KUBECONFIG,
  BOOTSTRAP_KUBELET_KUBECONFIG,
  CONTROLLER_MANAGER_KUBECONFIG,
  SCHEDULER_KUBECONFIG,
].map((name) => posix.join(KUBERNETES_DIR, name));

export interface CleanupNodeOptions {
  /** Where executables are looked up (tests); default: the host's PATH. */
  lookup?: LookupOptions;
}

async function stopKubelet(data: ResetData, log: Logger, lookup: LookupOptions): Promise<void> {
  const init = await getInitSystem(data.host, lookup);
  if (!init) {
    log.warn(
      "[reset] The kubelet service could not be stopped by kubeforge. Unable to detect a supported init system!",
    );
    log.warn("[reset] Please ensure kubelet is stopped manually");
    return;
  }
  log.info(data.wording.before("stop", "the kubelet service"));
  try {
    await init.serviceStop("kubelet");
  } catch (e) {
    log.warn(`[reset] The kubelet service could not be stopped by kubeforge: [${messageOf(e)}]`);
    log.warn("[reset] Please ensure kubelet is stopped manually");
  }
}

/** Unmounts below the kubelet directory; true when its contents may be deleted. */
async function unmountKubeletDir(data: ResetData, log: Logger): Promise<boolean> {
  const resolved = await resolveKubeletDir(data.host);
  if (!resolved.ok) {
    // A node that never ran a kubelet has nothing to unmount: not worth a warning.
    const line = `[reset] Skipping unmount of directories in "${KUBELET_RUN_DIR}": ${resolved.reason}`;
    if (resolved.missing) log.info(line);
    else log.warn(line);
    return false;
  }
  log.info(data.wording.before("unmount", `mounted directories in "${KUBELET_RUN_DIR}"`));
  await unmountUnder(data.host, resolved.realPath);
  return true;
}

async function removeContainers(data: ResetData, log: Logger, lookup: LookupOptions) {
  tell(log, data.wording.beforeDone("remove", "Kubernetes-managed containers"));
  try {
    const { sandboxes } = await removeKubernetesContainers(data.host, data.criSocket, lookup);
    if (sandboxes.length > 0) {
      const what = `${sandboxes.length} Kubernetes-managed pod sandbox(es) through ${data.criSocket}`;
      tell(log, data.wording.after("remove", what));
    }
  } catch (e) {
    log.warn(`[reset] Failed to remove containers: ${messageOf(e)}`);
  }
}

/** kubeadm's resetConfigDir: directory contents, then the kubeconfig files. */
async function cleanDirsAndFiles(
  host: Host,
  dirs: string[],
  files: string[],
  wording: ResetWording,
  log: Logger,
) {
  log.info(wording.before("delete", `contents of directories: ${goList(dirs)}`));
  for (const dir of dirs) {
    try {
      await cleanDir(host, dir);
    } catch (e) {
      log.warn(`[reset] Failed to delete contents of "${dir}" directory: ${messageOf(e)}`);
    }
  }
  if (files.length === 0) return;
  log.info(wording.before("delete", `files: ${goList(files)}`));
  for (const file of files) {
    try {
      await host.remove(file, { recursive: true });
    } catch (e) {
      log.warn(`[reset] Failed to remove file: "${file}" [${messageOf(e)}]`);
    }
  }
}

/** kubeforge's node-local API server proxy (several control planes without an endpoint). */
async function removeApiServerProxy(data: ResetData, log: Logger): Promise<void> {
  const { host } = data;
  if (!(await host.exists(APISERVER_PROXY_UNIT_PATH))) return;
  log.info(data.wording.before("stop and delete", `the API server proxy ${APISERVER_PROXY_UNIT}`));
  try {
    const init = await getInitSystem(host);
    await init?.serviceStop(APISERVER_PROXY_UNIT);
    await host.exec(["systemctl", "disable", APISERVER_PROXY_UNIT], {
      sudo: true,
      timeoutMs: 30_000,
    });
    await host.remove(APISERVER_PROXY_UNIT_PATH);
    // Its runtime API socket, if the stopped HAProxy left it.
    await host.remove(APISERVER_PROXY_SOCKET);
    await host.exec(["systemctl", "daemon-reload"], { sudo: true, timeoutMs: 30_000 });
  } catch (e) {
    log.warn(`[reset] Failed to remove ${APISERVER_PROXY_UNIT}: ${messageOf(e)}`);
  }
}

/** kubeforge's additions (see the top of this file). */
async function cleanKubeforgeState(data: ResetData, log: Logger): Promise<void> {
  const { host, wording } = data;
  const etcdDir = data.state.etcdDataDir;
  if (etcdDir && !(await isDirEmpty(host, etcdDir))) {
    await cleanDirsAndFiles(host, [etcdDir], [], wording, log);
  }
  const present = async (paths: string[]) =>
    (await Promise.all(paths.map(async (p) => ((await host.exists(p)) ? p : undefined)))).filter(
      (p): p is string => p !== undefined,
    );
  const cniDirs = [];
  for (const dir of [CNI_CONFIG_DIR, CNI_STATE_DIR])
    if (!(await isDirEmpty(host, dir))) cniDirs.push(dir);
  if (cniDirs.length > 0) await cleanDirsAndFiles(host, cniDirs, [], wording, log);
  await removeApiServerProxy(data, log);
  const own = await present(KUBEFORGE_DIRS);
  if (own.length > 0) {
    log.info(wording.before("delete", `contents of kubeforge's directories: ${goList(own)}`));
    for (const dir of own) {
      try {
        // Emptied, not removed: the folder may be a mount point (a separate disk, a test host).
        await cleanDir(host, dir);
      } catch (e) {
        log.warn(`[reset] Failed to empty directory: "${dir}" [${messageOf(e)}]`);
      }
    }
  }
  const link = await host.exec(["ip", "link", "show", BRIDGE_NAME], {
    readOnly: true,
    timeoutMs: 10_000,
  });
  if (link.code === 0) {
    log.info(wording.before("delete", `the pod network bridge ${BRIDGE_NAME}`));
    const del = await host.exec(["ip", "link", "delete", BRIDGE_NAME], {
      sudo: true,
      timeoutMs: 10_000,
    });
    if (del.code !== 0) {
      log.warn(
        `[reset] Failed to delete the bridge ${BRIDGE_NAME}: ${(del.stderr || del.stdout).trim()}`,
      );
    }
  }
}

export function createCleanupNodePhase(opts: CleanupNodeOptions = {}): Phase<ResetData> {
  const lookup = opts.lookup ?? {};
  return {
    name: "cleanup-node",
    short: "Run cleanup node.",
    run: async (data, ctx) => {
      const log = ctx.log;
      const dirs = [MANIFESTS_DIR];
      await stopKubelet(data, log, lookup);
      if (await unmountKubeletDir(data, log)) dirs.push(KUBELET_RUN_DIR);
      await removeContainers(data, log, lookup);
      if (data.certificatesDir !== DEFAULT_CERTIFICATES_DIR) {
        log.warn(
          `[reset] WARNING: Cleaning a non-default certificates directory: "${data.certificatesDir}"`,
        );
      }
      dirs.push(data.certificatesDir);
      if (data.cleanupTmpDir) dirs.push(KUBERNETES_TMP_DIR);
      await cleanDirsAndFiles(data.host, dirs, KUBECONFIG_FILES_TO_DELETE, data.wording, log);
      await cleanKubeforgeState(data, log);
    },
  };
}

export const cleanupNodePhase: Phase<ResetData> = createCleanupNodePhase();
