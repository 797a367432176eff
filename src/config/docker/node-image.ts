import { createHash } from "node:crypto";
import { LABELS } from "./network-plan.js";

// kubeforge's node image (pure): a stock Debian or Ubuntu image with systemd, containerd and
// what the kubelet and kubeadm's preflight need from the host; kubelet, kubectl, crictl and the
// CNI plugins come from node preparation, as on any host. The image is tagged by its recipe's
// digest, so a changed recipe is a new image and an unchanged one is found on the engine (or in
// the action's cache) instead of being built again.

/** Packages of the node (Debian names): systemd as init, the runtime, the kubelet's tools. */
export const NODE_PACKAGES = [
  "systemd",
  "systemd-sysv",
  "dbus",
  "containerd",
  "iptables",
  "iproute2",
  "ethtool",
  "socat",
  "conntrack",
  "ebtables",
  "kmod",
  "procps",
  "ca-certificates",
  "util-linux",
  "mount",
  // kubeforge's node-local API server proxy (several control planes, no endpoint of the user's).
  "haproxy",
] as const;

export const NODE_IMAGE_REPOSITORY = "kubeforge/node";

export interface NodeImageRecipe {
  baseImage: string;
  packages: readonly string[];
  /** The shell script run in a container of the base image (as root, host network). */
  script: string;
}

/**
 * Installs only what the base image lacks (a base that has every package needs no network),
 * cleans apt's lists, and keeps containerd enabled under systemd.
 */
function buildScript(packages: readonly string[]): string {
  return [
    "set -eu",
    'missing=""',
    `for p in ${packages.join(" ")}; do`,
    "  dpkg-query -W -f='${Status}' \"$p\" 2>/dev/null | grep -q 'install ok installed' || missing=\"$missing $p\"",
    "done",
    'if [ -n "$missing" ]; then',
    "  export DEBIAN_FRONTEND=noninteractive",
    "  apt-get update -qq",
    "  apt-get install -y -qq --no-install-recommends $missing",
    "  apt-get clean",
    "  rm -rf /var/lib/apt/lists/*",
    "fi",
    "systemctl enable containerd",
    "systemctl set-default multi-user.target",
  ].join("\n");
}

export function nodeImageRecipe(baseImage: string): NodeImageRecipe {
  return { baseImage, packages: NODE_PACKAGES, script: buildScript(NODE_PACKAGES) };
}

/** sha256 of the recipe: its base, its packages and its script. */
export function recipeDigest(r: NodeImageRecipe): string {
  return createHash("sha256")
    .update(JSON.stringify({ base: r.baseImage, packages: r.packages, script: r.script }))
    .digest("hex");
}

/** kubeforge/node:<first 16 hex digits of the recipe digest>. */
export function nodeImageTag(r: NodeImageRecipe): { repo: string; tag: string; ref: string } {
  const tag = recipeDigest(r).slice(0, 16);
  return { repo: NODE_IMAGE_REPOSITORY, tag, ref: `${NODE_IMAGE_REPOSITORY}:${tag}` };
}

/** The image's configuration at commit: systemd's command and stop signal, the recipe label. */
export function nodeImageConfig(r: NodeImageRecipe): Record<string, unknown> {
  return {
    Cmd: ["/sbin/init"],
    Entrypoint: null,
    StopSignal: "SIGRTMIN+3",
    Env: ["container=docker", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
    Labels: { [LABELS.recipe]: recipeDigest(r) },
  };
}
