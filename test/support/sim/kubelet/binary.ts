import { readFile } from "node:fs/promises";
import type { HostFiles } from "./host-files.js";

// SIMULATION (test double). Which kubelet the node has installed, read when the simulated
// kubelet starts — as the real kubelet, a process of the binary systemd starts, reports its own
// build: pkg/kubelet/nodestatus/setters.go VersionInfo sets status.nodeInfo.kubeletVersion to
// version.Get().String() (k8s.io/component-base/version, stamped into the binary at build
// time). Upgrading a kubelet means replacing the binary and restarting the service, so the
// reported version changes only across a restart.
//
// The binaries the test release server hands out (test/support/release-server.ts) are copies
// of /bin/true with a trailer "#kubeforge-test <path>", the path being the release URL's
// ".../dl/release/<version>/bin/linux/<arch>/kubelet". A trailer that also says
// "fail-to-start" stands for a kubelet binary that exits at once (a broken or foreign build):
// the simulated kubelet refuses to start, and kubelet.service's Restart=always retries it.

/** ExecStart of kubelet.service (the drop-in's last one wins), else where kubeforge installs it. */
async function kubeletPath(files: HostFiles): Promise<string> {
  let path: string | undefined;
  for (const unit of [
    "/etc/systemd/system/kubelet.service",
    "/etc/systemd/system/kubelet.service.d/10-kubeadm.conf",
  ]) {
    for (const line of ((await files.readText(unit)) ?? "").split("\n")) {
      const m = /^ExecStart=(\S+)/.exec(line.trim());
      if (m) path = m[1];
    }
  }
  return path ?? "/usr/local/bin/kubelet";
}

export interface InstalledKubelet {
  /** The version its trailer names, when it has one. */
  version?: string;
  failToStart: boolean;
}

/**
 * The binary's bytes: in the node's rootfs, else at its absolute path — an SSH testbed host's
 * /usr/local/bin is an overlay of its own mount namespace outside the rootfs (testbed-ssh.ts),
 * where kubeforge installs the kubelet and where this process, started by the host's systemctl
 * shim in that namespace, sees it.
 */
async function binaryBytes(files: HostFiles, path: string): Promise<Buffer | undefined> {
  return (await files.read(path)) ?? (await readFile(path).catch(() => undefined));
}

export async function installedKubelet(files: HostFiles): Promise<InstalledKubelet> {
  const bytes = await binaryBytes(files, await kubeletPath(files));
  const trailer = bytes ? /#kubeforge-test ([^\n]*)\n?$/.exec(bytes.toString("latin1")) : null;
  if (!trailer) return { failToStart: false };
  const version = /\/(v\d+\.\d+\.\d+[^/]*)\/bin\//.exec(trailer[1]!)?.[1];
  return {
    ...(version ? { version } : {}),
    failToStart: /\bfail-to-start\b/.test(trailer[1]!),
  };
}
