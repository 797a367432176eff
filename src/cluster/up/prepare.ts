import type { ClusterNodeSpec, ClusterSpec } from "../../config/cluster/types.js";
import type { Release } from "../../config/release.js";
import type { InitConfig } from "../../config/types.js";
import { kubeProxyImage } from "../../manifests/addons/kube-proxy.js";
import { coreDNSImage } from "../../manifests/addons/coredns.js";
import { controlPlaneImages } from "../../manifests/images.js";
import { pauseImage } from "../../manifests/kubelet.js";
import { goArch, releaseArtifacts } from "../../node/artifacts/catalog.js";
import {
  artifactCacheDir,
  fetchArtifact,
  fetchKubeletOverride,
  type FetchedArtifact,
  type FetchOptions,
} from "../../node/artifacts/fetch.js";
import { installArtifacts } from "../../node/artifacts/install.js";
import { parseCIDR, splitCIDRs } from "../../config/network.js";
import { prepareHostSettings } from "../../node/host-settings.js";
import { prePullImages } from "../../node/images.js";
import { installKubeletService } from "../../node/kubelet-service.js";
import { prepareContainerd } from "../../node/runtime/containerd.js";
import { allOrFirstError, fleet } from "../../remote/fleet.js";
import type { Host } from "../../remote/host.js";
import type { Reporter } from "../../workflow/reporter.js";

// Node preparation, the step of `kubeforge up` before init/join: the node binaries are
// downloaded and verified once per architecture on the runner, then every host in parallel gets
// its host settings, containerd, the binaries, the kubelet service and its images. Every
// download happens before any host is touched, so a bad download or a custom kubelet of the
// wrong architecture changes nothing anywhere. What kubeadm decides (image names, the kubelet's
// cgroup driver and swap setting) is read from the cluster's defaulted configuration, the one
// init will run with.

/** Where the kubelet is installed (node/artifacts INSTALL_DIRS); the unit's ExecStart. */
export const KUBELET_PATH = "/usr/local/bin/kubelet";

export interface PrepareNodesInput {
  spec: ClusterSpec;
  /** The hosts to prepare; `arch` in Node's names (HostFacts.arch: x64, arm64). */
  nodes: { node: ClusterNodeSpec; host: Host; arch: string }[];
  /** The cluster's configuration as init runs with it (the first control plane's, defaulted). */
  cluster: InitConfig;
  /** The version table's row (pause, etcd and CoreDNS tags). */
  release: Release;
  reporter: (node: string) => Reporter;
  env: NodeJS.ProcessEnv;
  /** Runner-side cache root (default artifactCacheDir(env)). */
  cacheDir?: string;
  /** Extra CA trusted for downloads (tests). */
  ca?: string | Buffer;
  /** How long to wait for containerd to answer CRI after a restart (tests shorten it). */
  runtimeTimeoutMs?: number;
}

/**
 * The kubelet's cgroup driver as kubeadm configures it (the KubeletConfiguration's, defaulted
 * to systemd: componentconfigs/kubelet.go); containerd's runc must use the same.
 */
export function kubeletCgroupDriver(cfg: Pick<InitConfig, "kubelet">): "systemd" | "cgroupfs" {
  return cfg.kubelet.cgroupDriver === "cgroupfs" ? "cgroupfs" : "systemd";
}

/**
 * Whether the kubelet is to run with swap: the KubeletConfiguration sets failSwapOn to false
 * (its default is true: the kubelet refuses to start with swap on). Only the cluster-wide
 * document counts, not a per-node patch.
 */
export function kubeletAllowsSwap(cfg: Pick<InitConfig, "kubelet">): boolean {
  return cfg.kubelet.failSwapOn === false;
}

/** `<repository>/pause:<tag>` (kubeadm images.GetPauseImage): containerd's sandbox image. */
export function sandboxImage(cfg: Pick<InitConfig, "cluster">, release: Release): string {
  return pauseImage(cfg.cluster.imageRepository, release);
}

/**
 * The images a node needs. Control planes: kubeadm's `config images list`
 * (controlPlaneImages) — what kubeadm's own preflight pulls on init and on a control-plane
 * join. Workers: kubeadm pulls nothing there; the kubelet pulls pause (every pod's sandbox),
 * kube-proxy (a DaemonSet on every node) and, once workers exist, CoreDNS (scheduled on them:
 * the control planes keep their taint).
 */
export function nodeImages(
  cfg: Pick<InitConfig, "cluster">,
  role: ClusterNodeSpec["role"],
  release: Release,
): string[] {
  const cluster = cfg.cluster;
  if (role === "control-plane") return controlPlaneImages(cluster, release);
  return [
    pauseImage(cluster.imageRepository, release),
    ...(cluster.proxy.disabled === true ? [] : [kubeProxyImage(cluster)]),
    ...(cluster.dns.disabled === true ? [] : [coreDNSImage(cluster, release)]),
  ];
}

export interface Downloads {
  /** Per Go arch: the official artifacts (kubelet left out where every node brings its own). */
  official: Map<string, FetchedArtifact[]>;
  /** Per custom kubelet source (as written): the fetched binary. */
  custom: Map<string, FetchedArtifact>;
}

/**
 * The custom kubelet a node gets: its own `kubeletBinary`, else the Cluster's; undefined = the
 * released one. (The action's kubelet-binary input replaces both: action/inputs.ts.)
 */
export const customKubeletOf = (spec: ClusterSpec, node: ClusterNodeSpec) =>
  node.kubeletBinary ?? spec.kubeletBinary;

/** What to download: per Go arch whether any node there takes the released kubelet; the custom ones. */
export function downloadPlan(spec: ClusterSpec, nodes: { node: ClusterNodeSpec; arch: string }[]) {
  const arches = new Map<string, { nodeArch: string; needsKubelet: boolean }>();
  for (const { node, arch } of nodes) {
    const a = goArch(arch);
    const entry = arches.get(a) ?? { nodeArch: arch, needsKubelet: false };
    if (customKubeletOf(spec, node) === undefined) entry.needsKubelet = true;
    arches.set(a, entry);
  }
  const sources = [
    ...new Set(nodes.map((n) => customKubeletOf(spec, n.node)).filter((s) => s !== undefined)),
  ];
  return { arches, sources };
}

/**
 * What a node gets installed: its architecture's official artifacts, then its custom kubelet
 * when it has one (installArtifacts: a later entry wins for the same path, so the custom kubelet
 * replaces an official one downloaded for another node of that architecture).
 */
export function artifactsOf(
  spec: ClusterSpec,
  downloads: Downloads,
  node: ClusterNodeSpec,
  arch: string,
): FetchedArtifact[] {
  const source = customKubeletOf(spec, node);
  return [
    ...(downloads.official.get(goArch(arch)) ?? []),
    ...(source !== undefined ? [downloads.custom.get(source)!] : []),
  ];
}

/** Every download, on the runner, before any host is touched. */
async function download(input: PrepareNodesInput, opts: FetchOptions): Promise<Downloads> {
  const { spec } = input;
  const { arches, sources } = downloadPlan(spec, input.nodes);
  const official = new Map<string, FetchedArtifact[]>();
  const custom = new Map<string, FetchedArtifact>();
  const jobs: Promise<void>[] = [];
  for (const [arch, { nodeArch, needsKubelet }] of arches) {
    const artifacts = releaseArtifacts(
      input.cluster.cluster.kubernetesVersion,
      nodeArch,
      spec.prepare.downloads,
    )
      // A kubelet nobody installs is not downloaded.
      .filter((a) => needsKubelet || a.name !== "kubelet");
    jobs.push(
      allOrFirstError(artifacts.map((a) => fetchArtifact(a, opts))).then((fetched) => {
        official.set(arch, fetched);
      }),
    );
  }
  for (const source of sources) {
    jobs.push(fetchKubeletOverride(source, opts).then((f) => void custom.set(source, f)));
  }
  await allOrFirstError(jobs);
  // A custom kubelet built for another architecture is refused here, not on the host.
  for (const { node, arch } of input.nodes) {
    const source = customKubeletOf(spec, node);
    const f = source === undefined ? undefined : custom.get(source);
    if (f && f.arch !== goArch(arch)) {
      throw new Error(
        `the custom kubelet ${f.source} is built for ${f.arch}, but node ${node.name} is ${goArch(arch)}`,
      );
    }
  }
  return { official, custom };
}

/** "<step>: <message>" without the host name the node modules already put first. */
function inStep<T>(step: string, host: Host, run: () => Promise<T>): Promise<T> {
  return run().catch((e: unknown) => {
    let message = e instanceof Error ? e.message : String(e);
    if (message.startsWith(`${host.name}: `)) message = message.slice(host.name.length + 2);
    throw new Error(`${step}: ${message}`, { cause: e });
  });
}

/** The image pulls prepareNodes started, still running when it returns. */
export class ImagePulls {
  private readonly pulls = new Map<string, Promise<void>>();
  private readonly controller = new AbortController();

  /** Given to the pulls: cancel() ends them. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Keeps a node's pulls; a failure waits for whoever asks (never an unhandled rejection). */
  add(node: string, pulls: Promise<void>): void {
    pulls.catch(() => {});
    this.pulls.set(node, pulls);
  }

  /** Resolves once the node's images are in (at once when none were pulled). */
  async done(node: string): Promise<void> {
    try {
      await this.pulls.get(node);
    } catch (e) {
      throw new Error(`${node}: ${(e as Error).message}`, { cause: e });
    }
  }

  /**
   * Ends the pulls still running and resolves once they are gone: `up` stopped before the
   * nodes needed their images, and a pull must neither outlive it (a local one would keep the
   * process alive for as long as the pull takes) nor go on changing the host.
   */
  async cancel(): Promise<void> {
    this.controller.abort(new Error("stopped before the images were needed"));
    await Promise.allSettled(this.pulls.values());
  }
}

/** True when a pod or service range is IPv6 (an ipv6 or dual-stack cluster). */
function usesIPv6(networking: { podSubnet: string; serviceSubnet: string }): boolean {
  return [networking.podSubnet, networking.serviceSubnet]
    .flatMap(splitCIDRs)
    .some((c) => parseCIDR(c)?.family === 6);
}

/**
 * Prepares the hosts for kubeadm: downloads (once per architecture, on the runner), then per
 * host in parallel (at most spec.concurrency at once) host settings and containerd, the
 * binaries and the kubelet service. The node's images are pulled from the moment containerd and
 * crictl are there and go on after this returns: a worker's pulls run while the control plane
 * initialises, off the critical path, and `up` waits for a node's pulls just before that node's
 * init or join. Idempotent: a prepared host is left as it is. With spec.prepare.enabled false it
 * does nothing. Fails with every failing host named and the step that failed.
 */
export async function prepareNodes(input: PrepareNodesInput): Promise<ImagePulls> {
  const { spec } = input;
  const prepare = spec.prepare;
  const imagePulls = new ImagePulls();
  if (!prepare.enabled || input.nodes.length === 0) return imagePulls;
  const first = input.nodes[0]!.node.name;
  const runnerLog = (line: string) => input.reporter(first).info(`[prepare] runner: ${line}`);
  const fetchOpts: FetchOptions = {
    cacheDir: input.cacheDir ?? artifactCacheDir(input.env),
    ...(input.ca !== undefined ? { ca: input.ca } : {}),
    log: runnerLog,
  };
  const downloads = await download(input, fetchOpts);
  const sandbox = sandboxImage(input.cluster, input.release);

  await fleet(
    input.nodes,
    (n) => n.node.name,
    async ({ node, host, arch }) => {
      const reporter = input.reporter(node.name);
      const log = (line: string) => reporter.info(`[prepare] ${line}`);
      const fetched = artifactsOf(spec, downloads, node, arch);
      // Binaries need no package manager: they go in while apt/dnf (one lock) serves the host
      // settings and then containerd.
      const binaries = inStep("binaries", host, () => installArtifacts(host, fetched, { log }));
      const runtime = (async () => {
        await inStep("host settings", host, () =>
          prepareHostSettings(host, {
            allowInstall: prepare.installPackages,
            log,
            keepSwap: kubeletAllowsSwap(input.cluster),
            ipv6Forwarding: usesIPv6(spec.networking),
          }),
        );
        return inStep("container runtime", host, () =>
          prepareContainerd(
            host,
            {
              sandboxImage: sandbox,
              systemdCgroup: kubeletCgroupDriver(input.cluster) === "systemd",
              registryMirrors: prepare.registryMirrors,
            },
            {
              allowInstall: prepare.installPackages,
              log,
              ...(input.runtimeTimeoutMs !== undefined
                ? { waitTimeoutMs: input.runtimeTimeoutMs }
                : {}),
            },
          ),
        );
      })();
      await allOrFirstError([binaries, runtime]);
      const rt = await runtime;
      // Pulls start once containerd answers and crictl is installed, and run on while the
      // kubelet service is written, the other hosts prepare and the control plane initialises.
      if (prepare.prePullImages) {
        imagePulls.add(
          node.name,
          inStep("image pre-pull", host, () =>
            prePullImages(host, nodeImages(input.cluster, node.role, input.release), {
              criSocket: rt.criSocket,
              log,
              signal: imagePulls.signal,
            }),
          ),
        );
      }
      await inStep("kubelet service", host, () =>
        installKubeletService(host, { kubeletPath: KUBELET_PATH, log }),
      );
    },
    { concurrency: spec.concurrency },
  ).catch(async (e: unknown) => {
    // Hosts that prepared before another failed have pulls running: nobody will wait for them.
    await imagePulls.cancel();
    throw e;
  });
  return imagePulls;
}
