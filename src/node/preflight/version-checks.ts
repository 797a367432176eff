// Version skew checks: kubeadm's KubernetesVersionCheck, KubeletVersionCheck and
// GetKubeletVersion (preflight/checks.go @00b6a4c7 ≈ v1.35, preflight/utils.go), with
// MinimumKubeletVersion = kubeadm's MAJOR.(MINOR-3).0 (constants.go getSkewedKubernetesVersion).
import semver, { type SemVer } from "semver";
import type { Host } from "../../remote/host.js";
import { lookPath, type LookupOptions } from "../lookpath.js";
import { type Check, fail, makeCheck, pass, warn } from "./checks.js";

/** apimachinery's version.String(): the numbers, pre-release and build, without a "v". */
function versionText(v: SemVer): string {
  return v.format() + (v.build.length > 0 ? `+${v.build.join(".")}` : "");
}

function parseVersion(text: string): SemVer | null {
  return semver.parse(text.trim().replace(/^v/, ""));
}

/**
 * Warning when the target Kubernetes version is newer than the tool supports. kubeadm compares
 * against its own MAJOR.(MINOR+1).0-0; kubeforge stands for kubeadm of the newest release it
 * supports, so `newestSupportedMinor` plays the kubeadm minor.
 */
export function kubernetesVersionCheck(
  kubernetesVersion: string,
  newestSupportedMinor: number,
): Check {
  return makeCheck("KubernetesVersion", () => {
    const k8s = parseVersion(kubernetesVersion);
    if (k8s === null) {
      return Promise.resolve(fail(`couldn't parse Kubernetes version "${kubernetesVersion}"`));
    }
    const firstUnsupported = `1.${newestSupportedMinor + 1}.0-0`;
    if (semver.gte(k8s, firstUnsupported)) {
      return Promise.resolve(
        warn(
          "Kubernetes version is greater than kubeadm version. Please consider to upgrade kubeadm. " +
            `Kubernetes version: ${versionText(k8s)}. Kubeadm version: 1.${newestSupportedMinor}.x`,
        ),
      );
    }
    return Promise.resolve(pass());
  });
}

// kubeadm utils.go GetKubeletVersion: the whole trimmed output must be "Kubernetes vX.Y.Z[...]".
const KUBELET_VERSION_OUTPUT =
  /^\s*Kubernetes v((0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)([-0-9a-zA-Z_.+]*)?)\s*$/;

export type KubeletVersionResult = { version: SemVer } | { error: string };

/** Runs `kubelet --version` on the host (kubeadm's GetKubeletVersion), with its error texts. */
export async function getKubeletVersion(
  host: Host,
  opts: LookupOptions = {},
): Promise<KubeletVersionResult> {
  const kubelet = await lookPath(host, "kubelet", opts);
  if (kubelet === undefined) {
    return {
      error: `cannot execute 'kubelet --version': exec: "kubelet": executable file not found in $PATH`,
    };
  }
  const r = await host.exec([kubelet, "--version"], { readOnly: true, timeoutMs: 30_000 });
  if (r.code !== 0) {
    return { error: `cannot execute 'kubelet --version': exit status ${r.code}` };
  }
  const out = r.stdout.trim();
  const m = KUBELET_VERSION_OUTPUT.exec(out);
  const version = m?.[1] === undefined ? null : semver.parse(m[1]);
  if (version === null)
    return { error: `Unable to parse output from Kubelet: ${JSON.stringify(out)}` };
  return { version };
}

/**
 * Error when the installed kubelet is older than MINOR-3 of the control plane kubeadm stands
 * for (`kubeadmMinor`), or its minor is newer than the control plane's. A kubelet that cannot
 * be run is an error too, as in kubeadm.
 */
export function kubeletVersionCheck(
  host: Host,
  kubernetesVersion: string,
  kubeadmMinor: number,
  opts: LookupOptions = {},
): Check {
  return makeCheck("KubeletVersion", async () => {
    const got = await getKubeletVersion(host, opts);
    if ("error" in got) return fail(`couldn't get kubelet version: ${got.error}`);
    const kubelet = got.version;
    const minimum = `1.${kubeadmMinor - 3}.0`;
    if (semver.lt(kubelet, minimum)) {
      return fail(
        `Kubelet version "${versionText(kubelet)}" is lower than kubeadm can support. Please upgrade kubelet`,
      );
    }
    if (kubernetesVersion !== "") {
      const k8s = parseVersion(kubernetesVersion);
      if (k8s === null) return fail(`couldn't parse Kubernetes version "${kubernetesVersion}"`);
      // kubeadm compares major and minor separately (not as a pair); kept as is.
      if (kubelet.major > k8s.major || kubelet.minor > k8s.minor) {
        return fail(
          "the kubelet version is higher than the control plane version. This is not a supported " +
            "version skew and may lead to a malfunctional cluster. " +
            `Kubelet version: "${versionText(kubelet)}" Control plane version: "${versionText(k8s)}"`,
        );
      }
    }
    return pass();
  });
}
