import { posix } from "node:path";
import { MANIFESTS_DIR } from "../../config/paths.js";
import {
  CA_TRUST_DIRS,
  controlPlanePods,
  type ControlPlaneComponent,
} from "../../manifests/control-plane.js";
import { applyPatches, readPatchDirectory, type PatchSet } from "../../manifests/patches.js";
import { renderStaticPod, type Pod } from "../../manifests/static-pod.js";
import { CA_BASE_NAME } from "../../pki/paths.js";
import { isExternalCA } from "../../node/pki-store.js";
import type { Host } from "../../remote/host.js";
import { presentPaths } from "../../remote/present-paths.js";
import type { Phase, PhaseContext } from "../../workflow/phase.js";
import type { InitData } from "./data.js";

// The "control-plane" phase of `kubeforge init`: kubeadm's cmd/phases/init/controlplane.go and
// phases/controlplane/manifests.go CreateStaticPodFiles. Manifests are rewritten on every run,
// as kubeadm does; the same configuration gives the same files.

/** Manifest dir 0700, manifests 0600 (kubeadm: util/staticpod WriteStaticPodToDisk). */
export const MANIFESTS_DIR_MODE = 0o700;
export const MANIFEST_MODE = 0o600;

/**
 * The patch set of `data.patchesDir`, read once per run (kubeadm reads it once per process) on
 * the machine kubeforge runs on. (kubeadm runs on the node, so for kubeadm the two are the same
 * machine.)
 */
export async function loadPatches(
  data: Pick<InitData, "patchesDir" | "runnerFiles">,
  ctx: PhaseContext,
): Promise<PatchSet | undefined> {
  if (!data.patchesDir) return undefined;
  return readPatchDirectory(data.runnerFiles, data.patchesDir, (l) => ctx.log.info(l), data);
}

/**
 * Reads and checks every patch of `data.patchesDir` without printing: preflight calls it so a
 * bad patch stops the run before any file is written (the phases that apply patches print what
 * reading them said, where kubeadm does).
 */
export async function checkPatches(
  data: Pick<InitData, "patchesDir" | "runnerFiles">,
): Promise<void> {
  if (data.patchesDir) await readPatchDirectory(data.runnerFiles, data.patchesDir, undefined, data);
}

/** Writes one static Pod, patched from `data.patchesDir`, to /etc/kubernetes/manifests. */
export async function writeStaticPod(
  data: Pick<InitData, "host" | "patchesDir" | "runnerFiles">,
  target: "etcd" | ControlPlaneComponent,
  pod: Pod,
  ctx: PhaseContext,
): Promise<string> {
  const patches = await loadPatches(data, ctx);
  const patched = patches ? applyPatches(target, pod, patches, (l) => ctx.log.info(l)) : pod;
  const path = posix.join(MANIFESTS_DIR, `${target}.yaml`);
  await data.host.mkdirp(MANIFESTS_DIR, MANIFESTS_DIR_MODE);
  try {
    await data.host.writeFile(path, renderStaticPod(patched), MANIFEST_MODE);
  } catch (e) {
    throw new Error(`failed to write the static Pod manifest ${path}: ${(e as Error).message}`, {
      cause: e,
    });
  }
  return path;
}

/** Which CA trust directories exist on the node (the machine itself, also under --rootfs). */
export async function existingCATrustDirs(host: Host): Promise<Set<string>> {
  return new Set(await presentPaths(host, "-e", CA_TRUST_DIRS));
}

function componentPhase(
  name: string,
  component: ControlPlaneComponent,
  short: string,
): Phase<InitData> {
  return {
    name,
    short,
    run: async (data, ctx) => {
      ctx.log.info(`Creating static Pod manifest for "${component}"`);
      const pods = controlPlanePods(data.cfg, data.release, {
        existingHostPaths: await existingCATrustDirs(data.host),
        proxyEnv: data.proxyEnv,
        // kubeadm's UsingExternalCA as the controller-manager flags use it: ca.crt without
        // ca.key. (Validating the certificates is the certs phase's job.)
        externalCA: await isExternalCA(data.host, data.cfg.cluster.certificatesDir, CA_BASE_NAME),
        warn: (m) => ctx.log.warn(m),
      });
      await writeStaticPod(data, component, pods[component], ctx);
    },
  };
}

export const controlPlanePhase: Phase<InitData> = {
  name: "control-plane",
  short: "Generate all static Pod manifest files necessary to establish the control plane",
  run: (_data, ctx) => {
    ctx.log.info(`Using manifest folder "${MANIFESTS_DIR}"`);
    return Promise.resolve();
  },
  phases: [
    componentPhase(
      "apiserver",
      "kube-apiserver",
      "Generates the kube-apiserver static Pod manifest",
    ),
    componentPhase(
      "controller-manager",
      "kube-controller-manager",
      "Generates the kube-controller-manager static Pod manifest",
    ),
    componentPhase(
      "scheduler",
      "kube-scheduler",
      "Generates the kube-scheduler static Pod manifest",
    ),
  ],
};
