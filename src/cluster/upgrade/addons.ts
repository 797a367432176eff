import { releaseFor } from "../../config/versions.js";
import type { InitConfig } from "../../config/types.js";
import { isNotFound } from "../../kube/errors.js";
import type { KubeClient, KubeObject } from "../../kube/types.js";
import { coreDNSImage } from "../../manifests/addons/coredns.js";
import { kubeProxyImage } from "../../manifests/addons/kube-proxy.js";

// The addons after the last control plane: kubeadm's addon phase changes CoreDNS and kube-proxy
// only once no kube-apiserver runs an older version (phases/upgrade/apply|node addons.go), so
// after the last control plane both must run the images kubeadm's target installs — the ones
// `kubeadm init` at that version would deploy for this ClusterConfiguration. An addon still on
// its old image means the addon phase was skipped, and the cluster would stay with old addons.

interface PodTemplateOwner extends KubeObject {
  spec?: { template?: { spec?: { containers?: { image?: string }[] } } };
}

export interface AddonImage {
  /** For people: "CoreDNS", "kube-proxy". */
  addon: string;
  /** kube-system/<name>. */
  kind: "Deployment" | "DaemonSet";
  name: string;
  /** What kubeadm's target installs. */
  expected: string;
}

/** The addon images kubeadm at `version` installs for this ClusterConfiguration (not the disabled). */
export function expectedAddonImages(
  cluster: Pick<InitConfig["cluster"], "imageRepository" | "dns" | "proxy">,
  version: string,
): AddonImage[] {
  const release = releaseFor(version);
  return [
    ...(cluster.dns?.disabled === true
      ? []
      : [
          {
            addon: "CoreDNS",
            kind: "Deployment" as const,
            name: "coredns",
            expected: coreDNSImage(cluster, release),
          },
        ]),
    ...(cluster.proxy?.disabled === true
      ? []
      : [
          {
            addon: "kube-proxy",
            kind: "DaemonSet" as const,
            name: "kube-proxy",
            expected: kubeProxyImage({ ...cluster, kubernetesVersion: version }),
          },
        ]),
  ];
}

/** One sentence per addon whose first container does not run the expected image. */
export function addonMismatches(
  wanted: readonly AddonImage[],
  running: ReadonlyMap<string, string | undefined>,
  version: string,
): string[] {
  return wanted.flatMap((a) => {
    const image = running.get(a.name);
    if (image === a.expected) return [];
    const what = `the addon ${a.addon} (kube-system/${a.name})`;
    return [
      image === undefined
        ? `${what} is missing; kubeadm ${version} installs ${a.expected}`
        : `${what} runs ${image}, not ${a.expected} that kubeadm ${version} installs`,
    ];
  });
}

/** Throws naming every addon that is not at the target's image. */
export async function checkAddonsAtTarget(
  admin: KubeClient,
  cluster: Pick<InitConfig["cluster"], "imageRepository" | "dns" | "proxy">,
  version: string,
): Promise<void> {
  const wanted = expectedAddonImages(cluster, version);
  const running = new Map<string, string | undefined>();
  for (const a of wanted) {
    const obj = await admin
      .get<PodTemplateOwner>({
        apiVersion: "apps/v1",
        kind: a.kind,
        name: a.name,
        namespace: "kube-system",
      })
      .catch((e: unknown) => {
        if (isNotFound(e)) return undefined;
        throw e;
      });
    running.set(a.name, obj?.spec?.template?.spec?.containers?.[0]?.image);
  }
  const problems = addonMismatches(wanted, running, version);
  if (problems.length > 0) {
    throw new Error(
      `the addons are not at ${version} after the last control plane: ${problems.join("; ")}`,
    );
  }
}
