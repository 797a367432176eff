import { posix } from "node:path";
import { DEFAULT_CRI_SOCKET, defaultCRISocket } from "../config/defaults.js";
import { decodeConfigDocuments } from "../config/load.js";
import { ADMIN_KUBECONFIG, DEFAULT_CERTIFICATES_DIR, KUBERNETES_DIR } from "../config/paths.js";
import type { ClusterConfiguration } from "../config/types.js";
import { parseYAMLDocuments } from "../config/yaml.js";
import { NodeClusterAccess } from "../kube/access.js";
import { isNotFound } from "../kube/errors.js";
import type { ClusterAccess, KubeClient } from "../kube/types.js";
import {
  KUBELET_CONFIG_FILE,
  KUBELET_DIR,
  KUBELET_FLAGS_ENV_FILE,
  KUBELET_INSTANCE_CONFIG_FILE,
} from "../manifests/kubelet.js";
import { validateIgnorePreflightErrors } from "../node/preflight/checks.js";
import { presentCRISockets } from "../node/preflight/cri.js";
import type { ResetData } from "../phases/reset/data.js";
import {
  dryRunResetEtcd,
  realResetEtcd,
  type ResetEtcdAccess,
} from "../phases/reset/etcd-access.js";
import { resetPhases } from "../phases/reset/index.js";
import { DRY_RUN_WORDING, RUN_WORDING } from "../phases/reset/wording.js";
import { ReportingDryRunHost } from "../remote/dry-run.js";
import { readFileIfExists, type Host } from "../remote/host.js";
import type { Reporter } from "../workflow/reporter.js";
import { Runner } from "../workflow/runner.js";

// Everything between an edge (CLI flags, `kubeforge down`) and the reset workflow, in kubeadm's
// order (cmd/reset.go newResetData, v1.35): read the cluster's configuration if the API answers
// (it may be gone: reset must work without it), then the CRI socket (flag, the node's kubelet
// files, the one socket present, kubeadm's default) and the certificates directory (flag, the
// cluster's certificatesDir, the default).
// A dry run reads the real machine (what would be removed is what exists now) and reports every
// change — command, file or directory removal — instead of making it; the etcd member is not
// touched. Unlike init and join, there is nothing to render, so no dry-run folder. The dry run
// lives in the data (resetEffects): the phases run the same code either way.

/** kubeadm's `kubeadm reset` flags kubeforge supports. */
export interface ResetFlags {
  /** --cert-dir: the certificates directory to clean. */
  certificatesDir?: string;
  /** --cri-socket. */
  criSocket?: string;
  /** --force: no confirmation. */
  force?: boolean;
  /** --cleanup-tmp-dir. */
  cleanupTmpDir?: boolean;
  /** --skip-phases. */
  skipPhases?: string[];
  /** --ignore-preflight-errors. */
  ignorePreflightErrors?: string[];
  /** --kubeconfig: how the cluster's configuration is read (default /etc/kubernetes/admin.conf). */
  kubeconfig?: string;
}

export interface ResetRequest {
  flags: ResetFlags;
  /** The machine to reset (its `rootfs`, if any, is already applied). */
  host: Host;
  /** Report what would change instead of changing anything. */
  dryRun: boolean;
  reporter: Reporter;
  /** The command's standard output: the closing message. */
  stdout: (text: string) => void;
  /**
   * Asks the user to confirm (the CLI at a terminal); absent when nobody can answer, in which
   * case a reset without --force (and without --dry-run) is refused.
   */
  confirm?: (prompt: string) => Promise<boolean>;
  /** How to reach the API; default: the node's kubeconfig files, read through the host. */
  api?: ClusterAccess;
  /** How the etcd member is removed; default: realResetEtcd(). */
  etcd?: ResetEtcdAccess;
  /** Bound on each API request reading the configuration. Default 10 s. */
  apiRequestTimeoutMs?: number;
  /**
   * false: the whole cluster is being torn down (`kubeforge down`): the etcd member is not
   * removed, its data directory is still cleaned. Default true (kubeadm's reset).
   */
  removeEtcdMember?: boolean;
}

export interface PreparedReset {
  data: ResetData;
  runner: Runner<ResetData>;
  /** --skip-phases. */
  skipPhases: string[];
  /** Prints the closing message (after a complete run). */
  done: () => void;
}

/**
 * kubeadm's manualCleanupInstructions (cmd/reset.go, v1.35), without the CNI configuration,
 * which kubeforge removes.
 */
export const RESET_DONE = `
The reset process does not perform cleanup of network filtering rules (iptables, nftables,
IPVS) and kubeconfig files such as $HOME/.kube/config.
The CNI configuration in /etc/cni/net.d was removed.

For information on how to perform this cleanup manually, please see:
    https://k8s.io/docs/reference/setup-tools/kubeadm/kubeadm-reset/

`;

const DEFAULT_API_REQUEST_TIMEOUT_MS = 10_000;

export interface ResetEffectsInput {
  /** The machine to reset. */
  host: Host;
  /** How its etcd member is removed in a real run. */
  etcd: ResetEtcdAccess;
  dryRun: boolean;
  /** --force: no confirmation. */
  force: boolean;
  /** Where a dry run reports each change it does not make. */
  report: (line: string) => void;
}

/**
 * What the reset phases change the machine through, and how they tell it: the real host and
 * etcd, or a dry run's — the machine read for real with every change reported, no etcd
 * contacted, "Would ..." lines — so that the phases run the same code either way.
 */
export function resetEffects(
  input: ResetEffectsInput,
): Pick<ResetData, "host" | "etcd" | "wording" | "askToConfirm"> {
  if (input.dryRun) {
    return {
      host: new ReportingDryRunHost(input.host, input.report),
      etcd: dryRunResetEtcd(),
      wording: DRY_RUN_WORDING,
      askToConfirm: false,
    };
  }
  return { host: input.host, etcd: input.etcd, wording: RUN_WORDING, askToConfirm: !input.force };
}

/** A certificates directory reset may empty: absolute, and not the root. */
function checkCertificatesDir(dir: string, source: string): string {
  if (!posix.isAbsolute(dir)) {
    throw new Error(`${source}: "${dir}" is not an absolute path`);
  }
  const clean = posix.normalize(dir).replace(/\/+$/, "");
  if (clean === "") throw new Error(`${source}: refusing to delete the contents of "/"`);
  return clean;
}

interface ClusterView {
  config?: ClusterConfiguration;
  client?: KubeClient;
}

/**
 * kubeadm's FetchInitConfigurationFromCluster as reset uses it: only when the kubeconfig exists,
 * and a failure is a warning (the API server may be gone already).
 */
async function readClusterView(request: ResetRequest, kubeconfig: string): Promise<ClusterView> {
  const { reporter, host } = request;
  if (!(await host.exists(kubeconfig))) return {};
  reporter.info("[reset] Reading configuration from the cluster...");
  reporter.info(
    "[reset] FYI: You can look at this config file with 'kubectl -n kube-system get cm kubeadm-config -o yaml'",
  );
  const access =
    request.api ??
    new NodeClusterAccess(host, {
      requestTimeoutMs: request.apiRequestTimeoutMs ?? DEFAULT_API_REQUEST_TIMEOUT_MS,
    });
  try {
    const client = await access.clientFor(kubeconfig);
    const cm = await client
      .get({
        apiVersion: "v1",
        kind: "ConfigMap",
        name: "kubeadm-config",
        namespace: "kube-system",
      })
      .catch((e: unknown) => {
        if (isNotFound(e)) throw new Error('configmaps "kubeadm-config" not found', { cause: e });
        throw e;
      });
    const text = (cm.data as Record<string, string> | undefined)?.ClusterConfiguration;
    if (!text)
      throw new Error("the ConfigMap kube-system/kubeadm-config has no ClusterConfiguration");
    const config = decodeConfigDocuments(text, "kube-system/kubeadm-config").cluster;
    return { ...(config ? { config } : {}), client };
  } catch (e) {
    reporter.warn(
      `[reset] Unable to fetch the kubeadm-config ConfigMap from cluster: ${(e as Error).message}`,
    );
    return {};
  }
}

/** The CRI endpoint the node's kubelet was configured with (kubeadm-flags.env, then its config). */
export async function kubeletCRISocket(host: Host): Promise<string | undefined> {
  const read = async (name: string) =>
    (await readFileIfExists(host, posix.join(KUBELET_DIR, name)))?.toString("utf8");
  const flags = await read(KUBELET_FLAGS_ENV_FILE);
  const flag = flags && /--container-runtime-endpoint=([^\s"]+)/.exec(flags)?.[1];
  if (flag) return flag;
  for (const name of [KUBELET_INSTANCE_CONFIG_FILE, KUBELET_CONFIG_FILE]) {
    const text = await read(name);
    if (!text) continue;
    try {
      const doc = parseYAMLDocuments(text, posix.join(KUBELET_DIR, name))[0] as
        { containerRuntimeEndpoint?: unknown } | undefined;
      if (typeof doc?.containerRuntimeEndpoint === "string" && doc.containerRuntimeEndpoint) {
        return doc.containerRuntimeEndpoint;
      }
    } catch {
      // An unreadable kubelet file does not decide the socket; the next source does.
    }
  }
  return undefined;
}

/** kubeadm's DetectCRISocket: the one known socket present, or the default when none is. */
async function detectCRISocket(host: Host): Promise<string> {
  const found = await presentCRISockets(host);
  if (found.length > 1) {
    throw new Error(
      `found multiple CRI endpoints on the host (${found.join(", ")}): choose one with --cri-socket`,
    );
  }
  return found[0] ?? DEFAULT_CRI_SOCKET;
}

export async function prepareReset(request: ResetRequest): Promise<PreparedReset> {
  const { reporter, flags } = request;
  const warn = (m: string) => reporter.warn(m);

  const ignorePreflightErrors = validateIgnorePreflightErrors(flags.ignorePreflightErrors ?? []);
  const givenCertDir =
    flags.certificatesDir === undefined
      ? undefined
      : checkCertificatesDir(flags.certificatesDir, "--cert-dir");
  const kubeconfig = flags.kubeconfig ?? posix.join(KUBERNETES_DIR, ADMIN_KUBECONFIG);

  const view = await readClusterView(request, kubeconfig);

  const criSocket = flags.criSocket
    ? defaultCRISocket(flags.criSocket, { warn })
    : defaultCRISocket(
        (await kubeletCRISocket(request.host)) ?? (await detectCRISocket(request.host)),
        { warn },
      );
  const certificatesDir =
    givenCertDir ??
    (view.config?.certificatesDir
      ? checkCertificatesDir(view.config.certificatesDir, "the cluster's certificatesDir")
      : DEFAULT_CERTIFICATES_DIR);

  const data: ResetData = {
    ...resetEffects({
      host: request.host,
      etcd: request.etcd ?? realResetEtcd(),
      dryRun: request.dryRun,
      force: flags.force === true,
      report: (line) => reporter.info(line),
    }),
    dryRun: request.dryRun,
    confirm: request.confirm,
    ignorePreflightErrors,
    certificatesDir,
    criSocket,
    cleanupTmpDir: flags.cleanupTmpDir === true,
    clusterConfiguration: view.config,
    client: view.client,
    removeEtcdMember: request.removeEtcdMember !== false,
    state: {},
  };
  return {
    data,
    runner: new Runner(resetPhases(), reporter),
    skipPhases: flags.skipPhases ?? [],
    done: () => request.stdout(RESET_DONE),
  };
}
