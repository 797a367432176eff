import { posix } from "node:path";
import { parseGoDuration } from "../config/duration.js";
import {
  joinInitConfig,
  joinNeedsAdvertiseAddress,
  defaultJoinConfig,
} from "../config/join-defaults.js";
import { applyJoinFlags, type JoinFlags } from "../config/join-flags.js";
import { validateJoinConfig } from "../config/join-validate.js";
import { configMapText, decodeComponentConfigs } from "../config/cluster-configmaps.js";
import { ConfigError, decodeConfigDocuments } from "../config/load.js";
import { removedAPIVersionProblems } from "../config/validate.js";
import { dryRunStackedEtcd, stackedEtcdThrough } from "../etcd/access.js";
import type { Release } from "../config/release.js";
import type { ConfigDocuments, InitConfig } from "../config/types.js";
import { releaseFor } from "../config/versions.js";
import { renderKubeConfig } from "../kubeconfig/build.js";
import { kubeClientFromKubeConfig } from "../kube/client.js";
import { discoverTLSBootstrapConfig, type TLSBootstrapDiscovery } from "../kube/discovery/index.js";
import { getIfExists } from "../kube/idempotency.js";
import { proxyEnvVars } from "../manifests/static-pod.js";
import { detectAdvertiseAddress } from "../node/address.js";
import { validateIgnorePreflightErrors } from "../node/preflight/checks.js";
import type { JoinData } from "../phases/join/data.js";
import { joinPhases } from "../phases/join/index.js";
import { KeyPool } from "../pki/keys.js";
import { routeThrough } from "../remote/route.js";
import { LocalHost } from "../remote/local.js";
import { Runner } from "../workflow/runner.js";
import { documentsOf, runMode, type WorkflowRequest } from "./run-mode.js";

// Everything between an edge (CLI flags) and the join workflow, in kubeadm's order (newJoinData):
// file → flags → the advertise address (control planes) → defaults → validation. Discovery and
// the cluster's configuration are lazy: the first phase that needs them fetches them, once.

export interface JoinRequest extends WorkflowRequest {
  /** Flags the user set, with the positional API server endpoint. */
  flags: JoinFlags;
}

export interface PreparedJoin {
  data: JoinData;
  runner: Runner<JoinData>;
  skipPhases: string[];
  dryRunDir: string | undefined;
}

/** kubeadm's joinControlPlaneDoneTemp (cmd/join.go). */
export const JOIN_CONTROL_PLANE_DONE = `
This node has joined the cluster and a new control plane instance was created:

* Certificate signing request was sent to apiserver and approval was received.
* The Kubelet was informed of the new secure connection details.
* Control plane label and taint were applied to the new node.
* The Kubernetes control plane instances scaled up.
* A new etcd member was added to the local/stacked etcd cluster.

To start administering your cluster from this node, you need to run the following as a regular user:

\tmkdir -p $HOME/.kube
\tsudo cp -i /etc/kubernetes/admin.conf $HOME/.kube/config
\tsudo chown $(id -u):$(id -g) $HOME/.kube/config

Run 'kubectl get nodes' to see this node join the cluster.
`;

/** kubeadm's joinWorkerNodeDoneMsg. */
export const JOIN_WORKER_DONE = `
This node has joined the cluster:
* Certificate signing request was sent to apiserver and a response was received.
* The Kubelet was informed of the new secure connection details.

Run 'kubectl get nodes' on the control-plane to see this node join the cluster.
`;

/**
 * Pins token discovery to the cluster's CAs. `up` prepares a node's join before the cluster
 * exists, when its CA is not known yet: the pins are set once init has run, before the join does.
 */
export function pinDiscovery(data: JoinData, caCertHashes: readonly string[]): void {
  const token = data.cfg.join.discovery.bootstrapToken;
  if (!token) throw new Error("the join uses no token discovery to pin to the cluster's CAs");
  token.caCertHashes = [...caCertHashes];
}

function once<T>(compute: () => Promise<T>): () => Promise<T> {
  let value: Promise<T> | undefined;
  return () => {
    value ??= compute().catch((e: unknown) => {
      value = undefined;
      throw e;
    });
    return value;
  };
}

export async function prepareJoin(request: JoinRequest): Promise<PreparedJoin> {
  const { reporter, host } = request;
  const startedAt = new Date();
  const warn = (m: string) => reporter.warn(m);
  const info = (m: string) => reporter.info(m);

  const decoded: ConfigDocuments = documentsOf(request.config);
  for (const w of decoded.warnings ?? []) warn(w);
  const docs = applyJoinFlags(decoded, request.flags, {
    configFileGiven: request.config !== undefined,
    warn,
  });
  const advertiseAddress = joinNeedsAdvertiseAddress(docs)
    ? await detectAdvertiseAddress(host)
    : undefined;
  const cfg = defaultJoinConfig(docs, {
    nodeName: await host.hostname(),
    ...(advertiseAddress ? { advertiseAddress } : {}),
    warn,
  });
  const discoveryFile = cfg.join.discovery.file?.kubeConfigPath;
  // Only a path is looked for on the host; validation says what is wrong with any URL but https.
  const isPath = discoveryFile !== undefined && !/^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(discoveryFile);
  const problems = validateJoinConfig(cfg, {
    ...(isPath
      ? {
          discoveryFileExists:
            posix.isAbsolute(discoveryFile) && (await host.exists(discoveryFile)),
        }
      : {}),
  });
  if (problems.length > 0) throw new ConfigError(problems);
  const ignorePreflightErrors = validateIgnorePreflightErrors(
    cfg.join.nodeRegistration.ignorePreflightErrors,
  );
  for (const token of [
    cfg.join.discovery.bootstrapToken?.token,
    cfg.join.discovery.tlsBootstrapToken,
  ]) {
    if (token) reporter.mask(token);
  }
  if (cfg.join.controlPlane?.certificateKey) reporter.mask(cfg.join.controlPlane.certificateKey);

  const dryRun = request.dryRun || cfg.join.dryRun;
  const { host: nodeHost, api, output, dryRunDir } = await runMode({ ...request, dryRun });

  // Connections the node would open (discovery, the TLS bootstrap client, etcd) leave this
  // process along the node's route: through its SSH connection when this process cannot
  // connect itself; directly for this machine (remote/route.ts).
  const route = routeThrough(host);
  // Discovery is real even in a dry run (kubeadm: "dry-run performs discovery"): it only reads.
  const tlsBootstrap = once<TLSBootstrapDiscovery>(() =>
    discoverTLSBootstrapConfig(cfg.join.discovery, {
      timeoutMs: parseGoDuration(cfg.join.timeouts.discovery),
      log: info,
      warn,
      readFile: (path) => host.readFile(path),
      route,
    }),
  );

  const bootstrapClient = once(async () =>
    kubeClientFromKubeConfig(
      renderKubeConfig((await tlsBootstrap()).tlsBootstrap, { preferences: false }),
      { description: "the TLS bootstrap kubeconfig", route },
    ),
  );

  const clusterConfig = once(async (): Promise<{ cfg: InitConfig; release: Release }> => {
    const client = await bootstrapClient();
    info("[preflight] Reading configuration from the cluster...");
    info(
      "[preflight] FYI: You can look at this config file with 'kubectl -n kube-system get cm kubeadm-config -o yaml'",
    );
    const opts = { timeoutMs: parseGoDuration(cfg.join.timeouts.kubernetesAPICall) };
    const read = (name: string) =>
      getIfExists(
        client,
        { apiVersion: "v1", kind: "ConfigMap", name, namespace: "kube-system" },
        opts,
      );
    const [kubeadmConfig, kubeletConfig, kubeProxy] = await Promise.all([
      read("kubeadm-config"),
      read("kubelet-config"),
      read("kube-proxy"),
    ]);
    const clusterText = configMapText(kubeadmConfig, "ClusterConfiguration");
    if (!clusterText) {
      throw new Error(
        "unable to fetch the kubeadm-config ConfigMap: the ConfigMap kube-system/kubeadm-config has no ClusterConfiguration; is this a cluster kubeadm or kubeforge built?",
      );
    }
    const cluster = decodeConfigDocuments(clusterText, "kube-system/kubeadm-config").cluster!;
    const components = decodeComponentConfigs(kubeletConfig, kubeProxy);
    const version = cluster.kubernetesVersion ?? "";
    const release = releaseFor(version);
    // kubeadm of the cluster's version would not have read a v1beta3 JoinConfiguration at all.
    const removedAPIs = removedAPIVersionProblems(decoded.v1beta3Documents, release);
    if (removedAPIs.length > 0) throw new ConfigError(removedAPIs);
    const initCfg = joinInitConfig(
      cfg,
      {
        cluster,
        ...components,
      },
      {
        resolved: { version, release, source: "the cluster's kubeadm-config" },
        warn,
        ...(advertiseAddress ? { advertiseAddress } : {}),
      },
    );
    return { cfg: initCfg, release };
  });

  const data: JoinData = {
    cfg,
    host: nodeHost,
    api,
    etcd: dryRun ? dryRunStackedEtcd(info) : stackedEtcdThrough(route),
    dryRun,
    patchesDir: cfg.join.patches?.directory,
    runnerFiles: new LocalHost(),
    ignorePreflightErrors,
    certificateKey: cfg.join.controlPlane?.certificateKey,
    proxyEnv: Object.fromEntries(proxyEnvVars(request.env).map((v) => [v.name, v.value ?? ""])),
    keys: new KeyPool(),
    output,
    now: request.now ?? (() => startedAt),
    tlsBootstrap,
    bootstrapClient,
    clusterConfig,
  };
  return {
    data,
    runner: new Runner(joinPhases(), reporter),
    skipPhases: cfg.join.skipPhases,
    dryRunDir,
  };
}
