// kubeadm's image pull at the end of preflight (preflight/checks.go RunPullImagesCheck and
// ImagePullCheck, read at kubernetes/kubernetes@00b6a4c7 ≈ v1.35), run by `init` and by a
// control-plane `join` after their checks:
// - the runtime must answer first; when it does not, preflight fails whatever is ignored;
// - the "ImagePull" check: policy Never pulls nothing; an unknown policy is an error; the
//   runtime's sandbox image is compared with the cluster's pause image (a warning when they
//   differ); then with imagePullSerial (the default) one image after another, IfNotPresent
//   skipping those the runtime has, else all at once (PullImagesInParallel, errors
//   aggregated). A failed pull is "failed to pull image <image>: <the runtime's error>".
// kubeforge talks to the runtime through crictl (runtime/crictl-images.ts).
import type { Release } from "../../config/release.js";
import type { ImagePullPolicy, InitConfig } from "../../config/types.js";
import { controlPlaneImages } from "../../manifests/images.js";
import { pauseImage } from "../../manifests/kubelet.js";
import type { Host } from "../../remote/host.js";
import { withHeartbeat, type HeartbeatOptions } from "../../workflow/heartbeat.js";
import type { LookupOptions } from "../lookpath.js";
import { CrictlImages } from "../runtime/crictl-images.js";
import { type Check, type CheckResult, type PreflightOutput, runChecks } from "./checks.js";
import { connectCRI, runtimeInfo, type CRIAnswersAhead, type CRIConnection } from "./cri.js";

export interface ImagePullInput {
  host: Host;
  /** nodeRegistration.criSocket */
  criSocket: string;
  /** kubeadm's GetControlPlaneImages, in its order. */
  images: readonly string[];
  /** kubeadm's GetPauseImage. */
  sandboxImage: string;
  policy: ImagePullPolicy;
  /** nodeRegistration.imagePullSerial (kubeadm's default: true). */
  serial: boolean;
  lookup?: LookupOptions;
  /** The "still pulling" lines' interval and clock (workflow/heartbeat.ts); tests shorten it. */
  heartbeat?: Pick<HeartbeatOptions, "everyMs" | "clock">;
}

/**
 * What a node of this cluster pulls: the cluster's control-plane images, with the node's own
 * CRI socket and pull settings (on a control-plane join: the JoinConfiguration's).
 */
export function imagePullInput(
  cluster: InitConfig["cluster"],
  release: Release,
  node: { criSocket: string; imagePullPolicy: ImagePullPolicy; imagePullSerial: boolean },
  host: Host,
  lookup: LookupOptions = {},
): ImagePullInput {
  return {
    host,
    criSocket: node.criSocket,
    images: controlPlaneImages(cluster, release),
    sandboxImage: pauseImage(cluster.imageRepository, release),
    policy: node.imagePullPolicy,
    serial: node.imagePullSerial,
    lookup,
  };
}

/** The preflight lines kubeadm prints before it pulls (the last one kubeforge's own). */
const PULL_NOTICE = [
  "Pulling images required for setting up a Kubernetes cluster",
  "This might take a minute or two, depending on the speed of your internet connection",
  "You can also perform this action beforehand: `kubeforge up` pulls them during node preparation",
];

/** What a dry run prints instead (kubeadm's words). */
const DRY_RUN_PULL_NOTICE = "Would pull the required images (like 'kubeadm config images pull')";

/** Whether the runtime has every image: the answer asked beside the connection, if for these. */
function allExist(
  runtime: CrictlImages,
  images: readonly string[],
  asked: CRIAnswersAhead["imagesPresent"],
): Promise<boolean> {
  const same =
    asked?.images.length === images.length && asked.images.every((x, i) => x === images[i]);
  return same ? asked.answer : runtime.allExist(images);
}

/**
 * The ImagePull check over a connected runtime; its first two questions (the runtime's info and
 * whether it has every image) answered by those asked beside the connection when there are.
 */
export function imagePullCheck(
  input: ImagePullInput,
  runtimeAnswers: { crictl: string | undefined } & CRIAnswersAhead,
  out: PreflightOutput,
): Check {
  const { crictl } = runtimeAnswers;
  return {
    name: () => "ImagePull",
    check: async (): Promise<CheckResult> => {
      const { policy, host } = input;
      if (policy === "Never") return { warnings: [], errors: [] };
      if (policy !== "Always" && policy !== "IfNotPresent") {
        return { warnings: [], errors: [`unsupported pull policy "${String(policy)}"`] };
      }
      if (crictl === undefined) {
        return {
          warnings: [],
          errors: [
            "crictl is not installed: kubeforge checks and pulls images through it (install cri-tools)",
          ],
        };
      }
      const runtime = new CrictlImages(host, crictl, input.criSocket);
      const ifNotPresent = policy === "IfNotPresent";
      // Images pulled ahead (node preparation, the upgrade's stage) are the usual case: one
      // question to the runtime answers for all of them, while it is asked its sandbox image.
      const [inUse, allPresent] = await Promise.all([
        sandboxImageOf(runtimeAnswers.info ?? runtimeInfo(host, crictl, input.criSocket)),
        ifNotPresent ? allExist(runtime, input.images, runtimeAnswers.imagesPresent) : false,
      ]);
      if (inUse !== undefined && inUse !== input.sandboxImage) {
        out.warn(
          `detected that the sandbox image "${inUse}" of the container runtime is inconsistent with that used by kubeadm. It is recommended to use "${input.sandboxImage}" as the CRI sandbox image.`,
        );
      }
      if (allPresent) return { warnings: [], errors: [] };
      // Images not yet pulled (or found present), named by the heartbeat while pulls go on:
      // kubeadm itself is silent here for minutes on a slow registry.
      const remaining = new Set(input.images);
      const pullOne = async (image: string): Promise<string | undefined> => {
        try {
          if (ifNotPresent && (await runtime.exists(image))) return undefined;
          const failure = await runtime.pull(image);
          return failure === undefined ? undefined : `failed to pull image ${image}: ${failure}`;
        } finally {
          remaining.delete(image);
        }
      };
      return withHeartbeat(
        {
          ...input.heartbeat,
          label: "still pulling",
          pending: () => [...remaining],
          log: (line) => out.info(line),
        },
        () => pullAll(input, pullOne),
      );
    },
  };
}

/** kubeadm's serial pull (errors listed) or PullImagesInParallel (one aggregate error). */
async function pullAll(
  input: ImagePullInput,
  pullOne: (image: string) => Promise<string | undefined>,
): Promise<CheckResult> {
  if (input.serial) {
    const errors: string[] = [];
    for (const image of input.images) {
      const e = await pullOne(image);
      if (e !== undefined) errors.push(e);
    }
    return { warnings: [], errors };
  }
  // PullImagesInParallel returns one aggregate error (k8s.io/apimachinery errors.Aggregate).
  const failed = (await Promise.all(input.images.map(pullOne))).filter(
    (e): e is string => e !== undefined,
  );
  if (failed.length === 0) return { warnings: [], errors: [] };
  return {
    warnings: [],
    errors: [failed.length === 1 ? failed[0]! : `[${failed.join(", ")}]`],
  };
}

/** The runtime's sandbox image from `crictl info` (config.sandboxImage), when it tells. */
async function sandboxImageOf(info: ReturnType<typeof runtimeInfo>): Promise<string | undefined> {
  const got = await info;
  if ("problem" in got) return undefined; // kubeadm only logs this at verbosity 4
  const image = got.info.config?.sandboxImage;
  return typeof image === "string" && image !== "" ? image : undefined;
}

/**
 * kubeadm's RunPullImagesCheck: the runtime must answer (an error no ignore covers), then the
 * ImagePull check through the preflight runner (ignoring "ImagePull" turns its errors into
 * warnings). `connected`: the answer the same preflight's checks got from the runtime just
 * before (a `crictl version` less), else it is asked here.
 */
export async function runPullImagesCheck(
  input: ImagePullInput,
  ignore: ReadonlySet<string>,
  out: PreflightOutput,
  connected?: CRIConnection,
): Promise<void> {
  const connection = connected ?? (await connectCRI(input.host, input.criSocket, input.lookup));
  if (!connection.connected) {
    throw new Error(`cannot pull the control-plane images: ${connection.reason}`);
  }
  await runChecks([imagePullCheck(input, connection, out)], ignore, out);
}

/**
 * The end of preflight on init and on a control-plane join: kubeadm's notice and the pull, or
 * in a dry run only the line saying it would pull.
 */
export async function pullControlPlaneImages(
  input: ImagePullInput,
  ignore: ReadonlySet<string>,
  out: PreflightOutput,
  opts: { dryRun: boolean; log: (line: string) => void },
): Promise<void> {
  if (opts.dryRun) return opts.log(DRY_RUN_PULL_NOTICE);
  for (const line of PULL_NOTICE) opts.log(line);
  await runPullImagesCheck(input, ignore, out);
}
