import { posix } from "node:path";
import { initEtcdPod } from "../../manifests/etcd.js";
import {
  CONTROL_PLANE_COMPONENTS,
  controlPlanePods,
  type ControlPlaneComponent,
} from "../../manifests/control-plane.js";
import { applyPatches, type PatchSet } from "../../manifests/patches.js";
import { renderStaticPod, type Pod } from "../../manifests/static-pod.js";
import { CA_BASE_NAME } from "../../pki/paths.js";
import { isExternalCA } from "../../node/pki-store.js";
import { writeFiles, type FileWrite } from "../../remote/host.js";
import type { PhaseContext } from "../../workflow/phase.js";
import { existingCATrustDirs, loadPatches, MANIFEST_MODE } from "../init/control-plane.js";
import type { UpgradeData } from "./data.js";

// The manifests an upgrade moves in: exactly what `init` renders for the same configuration at
// the target version (kubeadm: controlplane.CreateInitStaticPodManifestFiles and
// etcd.CreateLocalEtcdStaticPodManifestFile, both with the --patches folder), written into the
// upgrade's temporary folder. The etcd Pod is init's: this member alone in --initial-cluster,
// which a member with data ignores (kubeadm renders it the same way on every control plane).

/** The three control-plane Pods for `data.cfg`, as text, patched. */
export async function renderControlPlaneManifests(
  data: UpgradeData,
  ctx: PhaseContext,
  patches?: PatchSet,
): Promise<Map<ControlPlaneComponent, string>> {
  const pods = controlPlanePods(data.cfg, data.release, {
    existingHostPaths: await existingCATrustDirs(data.host),
    proxyEnv: data.proxyEnv,
    externalCA: await isExternalCA(data.host, data.cfg.cluster.certificatesDir, CA_BASE_NAME),
    warn: (m) => ctx.log.warn(m),
  });
  const out = new Map<ControlPlaneComponent, string>();
  for (const c of CONTROL_PLANE_COMPONENTS) out.set(c, render(c, pods[c], patches, ctx));
  return out;
}

/** The local etcd Pod for `data.cfg`, as text, patched. */
export function renderEtcdManifest(data: UpgradeData, ctx: PhaseContext, patches?: PatchSet) {
  return render("etcd", initEtcdPod(data.cfg, data.release), patches, ctx);
}

function render(
  target: "etcd" | ControlPlaneComponent,
  pod: Pod,
  patches: PatchSet | undefined,
  ctx: PhaseContext,
): string {
  const patched = patches ? applyPatches(target, pod, patches, (l) => ctx.log.info(l)) : pod;
  return renderStaticPod(patched);
}

/** The --patches folder, read once (kubeforge reads it on the machine it runs on). */
export function upgradePatches(
  data: UpgradeData,
  ctx: PhaseContext,
): Promise<PatchSet | undefined> {
  return loadPatches(data, ctx);
}

/** A rendered manifest as the file kubeadm writes into `dir`, with its mode. */
const manifestFile = (dir: string, component: string, text: string): FileWrite => ({
  path: posix.join(dir, `${component}.yaml`),
  data: text,
  mode: MANIFEST_MODE,
});

/** Writes rendered manifests into `dir`, in one command on the host. */
export async function writeManifests(
  data: UpgradeData,
  dir: string,
  manifests: ReadonlyMap<string, string>,
): Promise<void> {
  await writeFiles(
    data.host,
    [...manifests].map(([component, text]) => manifestFile(dir, component, text)),
  );
}

/** Writes a rendered manifest into `dir`; returns its path. */
export async function writeManifest(
  data: UpgradeData,
  dir: string,
  component: string,
  text: string,
): Promise<string> {
  const file = manifestFile(dir, component, text);
  await data.host.writeFile(file.path, file.data, file.mode);
  return file.path;
}
