import { posix } from "node:path";
import { MANIFESTS_DIR } from "../../config/paths.js";
import { fromFlagOrConfig } from "../../config/upgrade-config.js";
import { parseSemantic } from "../../config/upgrade-policy.js";
import { releaseFor } from "../../config/versions.js";
import { controlPlanePods, type ControlPlaneComponent } from "../../manifests/control-plane.js";
import { renderStaticPod } from "../../manifests/static-pod.js";
import { CA_BASE_NAME } from "../../pki/paths.js";
import { isExternalCA } from "../../node/pki-store.js";
import { existingCATrustDirs } from "../init/control-plane.js";
import { splitLines, unifiedDiff } from "./difflib.js";
import { planContext, type PlanRequest } from "./plan.js";

// `kubeforge upgrade diff [version]` (kubeadm's cmd/upgrade/diff.go runDiff, v1.35): the
// kube-apiserver, kube-controller-manager and kube-scheduler manifests the target version
// would get (GetStaticPodSpecs: no --patches, no proxy variables), each compared with the file
// on disk as a go-difflib unified diff ("--- <file>", "+++ new manifest"). etcd is not
// compared. The version: the cluster's, then diff.kubernetesVersion, then the argument.
// kubeadm ranges over a Go map (random order); kubeforge prints the three in kubeadm's order.

export interface DiffFlags {
  apiServerManifest?: string;
  controllerManagerManifest?: string;
  schedulerManifest?: string;
  contextLines?: number;
}

const DEFAULT_PATHS: Record<ControlPlaneComponent, string> = {
  "kube-apiserver": posix.join(MANIFESTS_DIR, "kube-apiserver.yaml"),
  "kube-controller-manager": posix.join(MANIFESTS_DIR, "kube-controller-manager.yaml"),
  "kube-scheduler": posix.join(MANIFESTS_DIR, "kube-scheduler.yaml"),
};

export async function runUpgradeDiff(request: PlanRequest & { diff: DiffFlags }): Promise<void> {
  const ctx = await planContext(request, { healthChecks: false, prefix: "upgrade/diff" });
  const d = ctx.upgradeConfig.diff;
  // As the configuration read it: a CI build's version without its "ci/" (its images keep the CI registry).
  let version = ctx.stored.kubernetesVersion ? ctx.cfg.cluster.kubernetesVersion : "";
  if (d.kubernetesVersion) version = d.kubernetesVersion;
  if (!version && request.version === undefined) {
    throw new Error("missing one or more required arguments. Required arguments: [version]");
  }
  if (request.version !== undefined) version = request.version;
  if (!parseSemantic(version)) {
    throw new Error(`could not parse "${version}" as version`);
  }
  const release = releaseFor(version);
  const cfg = { ...ctx.cfg, cluster: { ...ctx.cfg.cluster, kubernetesVersion: version } };
  const pods = controlPlanePods(cfg, release, {
    existingHostPaths: await existingCATrustDirs(ctx.host),
    proxyEnv: {},
    externalCA: await isExternalCA(ctx.host, cfg.cluster.certificatesDir, CA_BASE_NAME),
    warn: (m) => request.reporter.warn(m),
  });
  const paths: Record<ControlPlaneComponent, string | undefined> = {
    "kube-apiserver": request.diff.apiServerManifest ?? DEFAULT_PATHS["kube-apiserver"],
    "kube-controller-manager":
      request.diff.controllerManagerManifest ?? DEFAULT_PATHS["kube-controller-manager"],
    "kube-scheduler": request.diff.schedulerManifest ?? DEFAULT_PATHS["kube-scheduler"],
  };
  const context = fromFlagOrConfig(request.diff.contextLines, d.contextLines);
  for (const component of Object.keys(paths) as ControlPlaneComponent[]) {
    const path = paths[component];
    if (!path) throw new Error("empty manifest path");
    const existing = (await ctx.host.readFile(path)).toString("utf8");
    request.stdout(
      unifiedDiff({
        a: splitLines(existing),
        b: splitLines(renderStaticPod(pods[component])),
        fromFile: path,
        toFile: "new manifest",
        context,
      }),
    );
  }
}
