// The container runtime check. kubeadm (preflight/checks.go addCommonChecks, @00b6a4c7 ≈ v1.35)
// connects to nodeRegistration.criSocket first: when that fails it only logs
// "[preflight] WARNING: Couldn't create the interface used for talking to the container runtime"
// and leaves the CRI check out; when it works, the "CRI" check asks the runtime for its status
// (ContainerRuntime.IsRunning) and fails when it does not answer or is not ready.
// kubeforge talks CRI through `crictl` on the host when it is installed; without crictl it can
// only see whether the socket exists, and then trusts a present socket.
import { runtimeConfigFallbackRemovedIn } from "../../config/patch-level.js";
import type { Release } from "../../config/release.js";
import { CommandError, type Host } from "../../remote/host.js";
import { presentPaths } from "../../remote/present-paths.js";
import { lookPath, type LookupOptions } from "../lookpath.js";
import { CrictlImages } from "../runtime/crictl-images.js";
import { socketExists } from "../runtime/socket.js";
import { type Check, fail, makeCheck, pass, warn } from "./checks.js";

/** The socket path of a CRI endpoint ("unix:///run/containerd/containerd.sock" or a bare path). */
export function criSocketPath(endpoint: string): string {
  return endpoint.startsWith("unix://") ? endpoint.slice("unix://".length) : endpoint;
}

/** kubeadm: util/runtime defaultKnownCRISockets, in its order. */
export const KNOWN_CRI_SOCKETS = [
  "unix:///var/run/containerd/containerd.sock",
  "unix:///var/run/crio/crio.sock",
  "unix:///var/run/cri-dockerd.sock",
];

/** The socket paths of KNOWN_CRI_SOCKETS, in its order. */
export const KNOWN_CRI_SOCKET_PATHS = KNOWN_CRI_SOCKETS.map(criSocketPath);

/** The known CRI endpoints, in kubeadm's order, whose socket path is among `paths`. */
export function knownCRISocketsAt(paths: readonly string[]): string[] {
  return KNOWN_CRI_SOCKETS.filter((_, i) => paths.includes(KNOWN_CRI_SOCKET_PATHS[i]!));
}

/**
 * The known CRI endpoints whose socket exists on the host, in kubeadm's order. A socket that
 * cannot be looked at is not there, as kubeadm's isExistingSocket (a failed stat) has it.
 */
export async function presentCRISockets(host: Host): Promise<string[]> {
  const found = await presentPaths(host, "-S", KNOWN_CRI_SOCKET_PATHS, { sudo: true }).catch(
    (e: unknown): string[] => {
      if (e instanceof CommandError) return [];
      throw e;
    },
  );
  return knownCRISocketsAt(found);
}

/** The answers of questions asked beside the Version call (connectCRI's `ahead`). */
export interface CRIAnswersAhead {
  /** Whether the runtime implements RuntimeConfig (the ContainerRuntimeVersion check's). */
  runtimeConfig?: Promise<boolean | undefined>;
  /** `crictl info` (the image pull's sandbox image). */
  info?: Promise<RuntimeInfoAnswer>;
  /** Whether the runtime has every one of `images` (the image pull's first question). */
  imagesPresent?: { images: readonly string[]; answer: Promise<boolean> };
}

export type CRIConnection =
  | ({ connected: true; crictl: string | undefined } & CRIAnswersAhead)
  | { connected: false; reason: string };

/** Questions the checks after the connection will ask; each only reads. */
export interface CRIQuestionsAhead {
  runtimeConfig?: boolean;
  /** The image pull's: the runtime's info and whether it has these images. */
  imagePull?: { images: readonly string[] };
}

function askAhead(
  host: Host,
  crictl: string,
  endpoint: string,
  ahead: CRIQuestionsAhead,
): CRIAnswersAhead {
  const asked: CRIAnswersAhead = {};
  if (ahead.runtimeConfig) asked.runtimeConfig = supportsRuntimeConfig(host, crictl, endpoint);
  if (ahead.imagePull) {
    const { images } = ahead.imagePull;
    asked.info = runtimeInfo(host, crictl, endpoint);
    asked.imagesPresent = {
      images,
      answer: new CrictlImages(host, crictl, endpoint).allExist(images),
    };
  }
  // A question nobody takes must not surface as an unhandled rejection.
  for (const p of answersOf(asked)) p.catch(() => {});
  return asked;
}

const answersOf = (a: CRIAnswersAhead): Promise<unknown>[] =>
  [a.runtimeConfig, a.info, a.imagesPresent?.answer].filter((p) => p !== undefined);

/**
 * kubeadm's ContainerRuntime.Connect, done with crictl (a Version call) or a socket test. The
 * questions in `ahead` — what the checks after it ask next: the ContainerRuntimeVersion check's
 * RuntimeConfig call, the image pull's info and image questions — are sent beside the Version
 * call (all only read; their answers count only once connected), which saves the round trips
 * after it.
 */
export async function connectCRI(
  host: Host,
  endpoint: string,
  opts: LookupOptions = {},
  ahead: CRIQuestionsAhead = {},
): Promise<CRIConnection> {
  const crictl = await lookPath(host, "crictl", opts);
  if (crictl !== undefined) {
    const asked = askAhead(host, crictl, endpoint, ahead);
    const r = await host.exec([crictl, "--runtime-endpoint", endpoint, "version"], {
      sudo: true,
      readOnly: true,
      timeoutMs: 30_000,
    });
    if (r.code === 0) return { connected: true, crictl, ...asked };
    // Nobody takes their answers now: they end before the check does, not on their own later.
    await Promise.allSettled(answersOf(asked));
    const detail = (r.stderr || r.stdout).trim().split("\n").at(-1) ?? "";
    return {
      connected: false,
      reason: `validate CRI v1 runtime API for endpoint "${endpoint}": ${detail}`,
    };
  }
  const socket = criSocketPath(endpoint);
  return (await socketExists(host, socket))
    ? { connected: true, crictl: undefined }
    : { connected: false, reason: `no container runtime socket at ${socket}` };
}

export function criConnectWarning(reason: string): string {
  return `[preflight] WARNING: Couldn't create the interface used for talking to the container runtime: ${reason}`;
}

interface CRIInfo {
  status?: {
    conditions?: { type?: string; status?: boolean; reason?: string; message?: string }[];
  };
  /** The runtime's own configuration (containerd: sandboxImage among it). */
  config?: { sandboxImage?: unknown };
}

type RuntimeInfoAnswer = { info: CRIInfo } | { problem: string };

/** `crictl info`: the runtime's status and configuration, or why it gave none. */
export async function runtimeInfo(
  host: Host,
  crictl: string,
  endpoint: string,
): Promise<RuntimeInfoAnswer> {
  const r = await host.exec([crictl, "--runtime-endpoint", endpoint, "info"], {
    sudo: true,
    readOnly: true,
    timeoutMs: 30_000,
  });
  if (r.code !== 0) return { problem: (r.stderr || r.stdout).trim().split("\n").at(-1) ?? "" };
  try {
    return { info: JSON.parse(r.stdout) as CRIInfo };
  } catch {
    return { problem: "its status is not JSON" };
  }
}

/**
 * The "CRI" check: error when the runtime does not report its status, or reports the
 * RuntimeReady condition false [M: condition handling after kubeadm's IsRunning].
 */
export function criCheck(host: Host, endpoint: string, connection: CRIConnection): Check {
  return makeCheck("CRI", async () => {
    if (!connection.connected || connection.crictl === undefined) return pass();
    const got = await runtimeInfo(host, connection.crictl, endpoint);
    if ("problem" in got) return fail(`container runtime is not running: ${got.problem}`);
    for (const c of got.info.status?.conditions ?? []) {
      if (c.type === "RuntimeReady" && c.status !== true) {
        return fail(
          `container runtime condition "RuntimeReady" is not true. reason: ${c.reason ?? ""}, message: ${c.message ?? ""}`,
        );
      }
    }
    return pass();
  });
}

// kubeadm's ContainerRuntimeVersion check (kubernetes/kubernetes#134906, in 1.35): asks the
// runtime for its RuntimeConfig (the cgroup driver, KEP-4033) and warns when the runtime does not
// implement that CRI method (containerd 1.7: "rpc error: code = Unimplemented desc = method
// RuntimeConfig not implemented"), because the kubelet's fallback to its own cgroupDriver goes
// in a later release. A warning in every release kubeforge supports: the error for kubelets
// from 1.38 on is kubernetes/kubernetes#135923, not merged. The wording is the one kubeadm
// v1.35.0 prints (users' logs of `kubeadm init`, `join` and `upgrade apply`), with the release
// the version table names (#136898: 1.37, #139122 and its 1.35 cherry-pick #139268: 1.38).
// kubeforge asks through `crictl runtime-config` (cri-tools ≥ 1.28: "get runtime config: call
// RuntimeConfig RPC: <the runtime's error>"). [M] kubeadm's answer to other failures of the
// call; kubeforge gives none: without crictl, or with a crictl too old to ask, it cannot tell.

export const RUNTIME_CONFIG_KEP =
  "https://git.k8s.io/enhancements/keps/sig-node/4033-group-driver-detection-over-cri";

/** kubeadm's ContainerRuntimeVersion warning, naming the release that drops the fallback. */
export function runtimeConfigWarning(removedIn: string): string {
  return `You must update your container runtime to a version that supports the CRI method RuntimeConfig. Falling back to using cgroupDriver from kubelet config will be removed in ${removedIn}. For more information, see ${RUNTIME_CONFIG_KEP}`;
}

/** Whether the runtime at `endpoint` answers RuntimeConfig; undefined when crictl cannot tell. */
export async function supportsRuntimeConfig(
  host: Host,
  crictl: string,
  endpoint: string,
): Promise<boolean | undefined> {
  const r = await host.exec([crictl, "--runtime-endpoint", endpoint, "runtime-config"], {
    sudo: true,
    readOnly: true,
    timeoutMs: 30_000,
  });
  if (r.code === 0) return true;
  return /code = Unimplemented/.test(`${r.stderr}\n${r.stdout}`) ? false : undefined;
}

/** The "ContainerRuntimeVersion" check of kubeadm ≥ 1.35 (`removedIn` from the version table). */
export function containerRuntimeVersionCheck(
  host: Host,
  endpoint: string,
  connection: CRIConnection,
  removedIn: string,
): Check {
  return makeCheck("ContainerRuntimeVersion", async () => {
    if (!connection.connected || connection.crictl === undefined) return pass();
    const supported = await (connection.runtimeConfig ??
      supportsRuntimeConfig(host, connection.crictl, endpoint));
    return supported === false ? warn(runtimeConfigWarning(removedIn)) : pass();
  });
}

/** The kubeadm kubeforge stands for: its exact version and its row of the version table. */
export interface KubeadmRelease {
  readonly version: string;
  readonly release: Release;
}

/** Whether kubeadm of that release asks the runtime for its RuntimeConfig (1.35+). */
export function asksRuntimeConfig(kubeadm: KubeadmRelease): boolean {
  return runtimeConfigFallbackRemovedIn(kubeadm.version, kubeadm.release) !== undefined;
}

/** The ContainerRuntimeVersion check when kubeadm of that release has one (1.35+), else none. */
export function containerRuntimeVersionChecks(
  host: Host,
  endpoint: string,
  connection: CRIConnection,
  kubeadm: KubeadmRelease,
): Check[] {
  const removedIn = runtimeConfigFallbackRemovedIn(kubeadm.version, kubeadm.release);
  return removedIn === undefined
    ? []
    : [containerRuntimeVersionCheck(host, endpoint, connection, removedIn)];
}
