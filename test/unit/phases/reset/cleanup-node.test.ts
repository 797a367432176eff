import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  cleanupNodePhase,
  KUBECONFIG_FILES_TO_DELETE,
} from "../../../../src/phases/reset/cleanup-node.js";
import type { LocalHost } from "../../../../src/remote/local.js";
import { HostDouble, onPath, type CommandStub } from "../../../support/host-double.js";
import { tempRootHost } from "../../../support/init-fixtures.js";
import { CRI, resetData, runResetPhase, writeNodeFiles } from "./fixtures.js";

// kubeadm's cleanup-node (cmd/phases/reset/cleanupnode.go, v1.35) and kubeforge's additions, on
// a rootfs holding what init, the kubelet and kubeforge leave on a control plane. The machine's
// service manager, mounts and container runtime are stubbed (HostDouble): their real versions
// are exercised by test/integration/reset.

const CRICTL = "/usr/local/bin/crictl";
const POD = "c".repeat(64);
const VOLUME = "/var/lib/kubelet/pods/9e/volumes/kubernetes.io~projected/kube-api-access";

const NODE_FILES = {
  "/etc/kubernetes/manifests/etcd.yaml": "pod",
  "/etc/kubernetes/manifests/kube-apiserver.yaml": "pod",
  "/etc/kubernetes/pki/ca.crt": "cert",
  "/etc/kubernetes/pki/etcd/ca.key": "key",
  "/etc/kubernetes/admin.conf": "kubeconfig",
  "/etc/kubernetes/super-admin.conf": "kubeconfig",
  "/etc/kubernetes/kubelet.conf": "kubeconfig",
  "/etc/kubernetes/controller-manager.conf": "kubeconfig",
  "/etc/kubernetes/scheduler.conf": "kubeconfig",
  "/etc/kubernetes/tmp/kubeadm-backup-etcd/x": "backup",
  "/etc/kubernetes/audit-policy.yaml": "the user's own file",
  "/var/lib/kubelet/config.yaml": "kubelet config",
  "/var/lib/kubelet/pki/kubelet-client-current.pem": "pem",
  [`${VOLUME}/token`]: "token",
  "/etc/cni/net.d/10-kubeforge-bridge.conflist": "{}",
  "/var/lib/cni/networks/kubeforge/10.244.0.2": "container",
  "/var/lib/kubeforge/node.json": "{}",
  "/etc/kubeforge/haproxy.cfg": "cfg",
};

let host: LocalHost;
let root: string;
let cleanup: () => Promise<void>;

beforeEach(async () => {
  ({ host, root, cleanup } = await tempRootHost());
});
afterEach(() => cleanup());

interface Machine {
  mounts?: string[];
  /** Pod sandboxes the runtime lists (default: one). */
  pods?: string[];
  extra?: CommandStub[];
  bridge?: boolean;
}

/** The machine's side, stubbed: systemd, /proc/mounts, readlink, umount, crictl, ip. */
function machine(o: Machine = {}) {
  return new HostDouble(host, {
    files: {
      "/proc/mounts": [
        "/dev/sda1 / ext4 rw 0 0",
        ...(o.mounts ?? []).map((m) => `tmpfs ${m} tmpfs rw 0 0`),
        "",
      ].join("\n"),
    },
    commands: [
      ...(o.extra ?? []),
      onPath("systemctl", "/usr/bin/systemctl"),
      onPath("crictl", CRICTL),
      { match: ["readlink", "-f"], result: { stdout: "/var/lib/kubelet\n" } },
      {
        match: [CRICTL, "--runtime-endpoint", CRI, "pods", "-q"],
        result: { stdout: (o.pods ?? [POD]).map((p) => `${p}\n`).join("") },
      },
      {
        match: ["ip", "link", "show"],
        result: o.bridge ? { stdout: "5: kubeforge0: <BROADCAST>" } : { code: 1 },
      },
      { match: () => true, result: { code: 0 } },
    ],
  });
}

const ls = (path: string) => readdir(join(root, path)).catch(() => "missing");
const changes = (h: HostDouble) =>
  h.calls.filter((c) => !c.opts.readOnly).map((c) => c.argv.join(" "));

describe("cleanup-node", () => {
  it("stops the kubelet, unmounts, removes the pods, empties kubeadm's folders and deletes its files", async () => {
    await writeNodeFiles(root, NODE_FILES);
    const h = machine({ mounts: [VOLUME] });
    const log = await runResetPhase(cleanupNodePhase, resetData(h));
    expect(changes(h)).toEqual([
      "systemctl stop kubelet",
      `umount ${VOLUME}`,
      `${CRICTL} --runtime-endpoint ${CRI} stopp ${POD}`,
      `${CRICTL} --runtime-endpoint ${CRI} rmp ${POD}`,
    ]);
    for (const dir of ["etc/kubernetes/manifests", "etc/kubernetes/pki", "var/lib/kubelet"]) {
      expect([dir, await ls(dir)]).toEqual([dir, []]);
    }
    // Only the files kubeadm writes; the temporary folder needs --cleanup-tmp-dir.
    expect(await ls("etc/kubernetes")).toEqual(["audit-policy.yaml", "manifests", "pki", "tmp"]);
    expect(log.warnings).toEqual([]);
    expect(log.lines).toEqual([
      "[reset] Stopping the kubelet service",
      '[reset] Unmounting mounted directories in "/var/lib/kubelet"',
      `[reset] Removed 1 Kubernetes-managed pod sandbox(es) through ${CRI}`,
      "[reset] Deleting contents of directories: [/etc/kubernetes/manifests /var/lib/kubelet /etc/kubernetes/pki]",
      `[reset] Deleting files: [${KUBECONFIG_FILES_TO_DELETE.join(" ")}]`,
      "[reset] Deleting contents of directories: [/etc/cni/net.d /var/lib/cni]",
      "[reset] Deleting contents of kubeforge's directories: [/etc/kubeforge /var/lib/kubeforge]",
    ]);
  });

  it("deletes kubeadm's kubeconfig files, super-admin.conf included, in kubeadm's order", () => {
    expect(KUBECONFIG_FILES_TO_DELETE).toEqual([
      "/etc/kubernetes/admin.conf",
      "/etc/kubernetes/super-admin.conf",
      "/etc/kubernetes/kubelet.conf",
      "/etc/kubernetes/bootstrap-kubelet.conf",
      "/etc/kubernetes/controller-manager.conf",
      "/etc/kubernetes/scheduler.conf",
    ]);
  });

  it("removes kubeforge's state: CNI configuration and IPAM state, its folders, the pod bridge", async () => {
    await writeNodeFiles(root, NODE_FILES);
    const h = machine({ bridge: true });
    await runResetPhase(cleanupNodePhase, resetData(h));
    expect([await ls("etc/cni/net.d"), await ls("var/lib/cni")]).toEqual([[], []]);
    // Emptied, not removed: on a test host or a separate disk the folder is a mount point.
    expect([await ls("etc/kubeforge"), await ls("var/lib/kubeforge")]).toEqual([[], []]);
    expect(changes(h)).toContain("ip link delete kubeforge0");
  });

  it("stops before deleting anything when a mount below /var/lib/kubelet stays mounted", async () => {
    await writeNodeFiles(root, NODE_FILES);
    const h = machine({
      mounts: [VOLUME],
      extra: [
        { match: ["umount"], result: { code: 32, stderr: `umount: ${VOLUME}: target is busy.` } },
      ],
    });
    await expect(runResetPhase(cleanupNodePhase, resetData(h))).rejects.toThrow(
      /^error execution phase cleanup-node: encountered the following errors while unmounting directories in "\/var\/lib\/kubelet\/": .*target is busy/,
    );
    expect(await ls(VOLUME)).toEqual(["token"]);
    expect((await ls("etc/kubernetes/pki")).length).toBeGreaterThan(0);
  });

  it("warns and goes on when the kubelet cannot be stopped or the containers cannot be removed", async () => {
    await writeNodeFiles(root, NODE_FILES);
    const h = machine({
      extra: [
        {
          match: ["systemctl", "stop"],
          result: { code: 1, stderr: "Failed to stop kubelet.service: Access denied" },
        },
        {
          match: (a) => a[3] === "pods",
          result: { code: 1, stderr: "connect: no such file or directory" },
        },
      ],
    });
    const log = await runResetPhase(cleanupNodePhase, resetData(h));
    expect(log.warnings).toEqual([
      expect.stringMatching(
        /^\[reset\] The kubelet service could not be stopped by kubeforge: \[failed to stop kubelet: .*Access denied\]$/,
      ),
      "[reset] Please ensure kubelet is stopped manually",
      expect.stringMatching(
        /^\[reset\] Failed to remove containers: failed to list pod sandboxes: .*no such file or directory$/,
      ),
    ]);
    expect(await ls("etc/kubernetes/manifests")).toEqual([]);
  });

  it("warns when there is no init system or no crictl", async () => {
    const h = machine({
      extra: [
        onPath("systemctl", undefined),
        onPath("openrc", undefined),
        onPath("crictl", undefined),
      ],
    });
    const log = await runResetPhase(cleanupNodePhase, resetData(h));
    expect(log.warnings).toEqual([
      "[reset] The kubelet service could not be stopped by kubeforge. Unable to detect a supported init system!",
      "[reset] Please ensure kubelet is stopped manually",
      expect.stringMatching(/^\[reset\] Failed to remove containers: crictl is not on the PATH/),
    ]);
  });

  it("cleans a non-default certificates directory with a warning, and /etc/kubernetes/tmp on request", async () => {
    await writeNodeFiles(root, { ...NODE_FILES, "/srv/pki/ca.crt": "cert" });
    const log = await runResetPhase(
      cleanupNodePhase,
      resetData(machine(), { certificatesDir: "/srv/pki", cleanupTmpDir: true }),
    );
    expect(log.warnings).toEqual([
      '[reset] WARNING: Cleaning a non-default certificates directory: "/srv/pki"',
    ]);
    expect(await ls("srv/pki")).toEqual([]);
    expect(await ls("etc/kubernetes/pki")).toEqual(["ca.crt", "etcd"]);
    expect(await ls("etc/kubernetes/tmp")).toEqual([]);
  });

  it("empties the etcd data directory once more when etcd wrote to it while it stopped", async () => {
    await writeNodeFiles(root, { "/var/lib/etcd/member/wal/1.wal": "late write" });
    const data = resetData(machine(), { state: { etcdDataDir: "/var/lib/etcd" } });
    await runResetPhase(cleanupNodePhase, data);
    expect(await ls("var/lib/etcd")).toEqual([]);
  });

  it("changes nothing on a clean host and warns about nothing", async () => {
    const h = machine();
    const log = await runResetPhase(cleanupNodePhase, resetData(h, { criSocket: CRI }));
    expect(log.warnings).toEqual([]);
    expect(changes(h)).toEqual([
      "systemctl stop kubelet",
      `${CRICTL} --runtime-endpoint ${CRI} stopp ${POD}`,
      `${CRICTL} --runtime-endpoint ${CRI} rmp ${POD}`,
    ]);
    expect(await readdir(root)).toEqual([]);
  });

  it("in a dry run reports every change and makes none", async () => {
    await writeNodeFiles(root, NODE_FILES);
    const h = machine({ mounts: [VOLUME], bridge: true });
    const reported: string[] = [];
    const data = resetData(h, { dryRun: true, report: (l) => reported.push(l) });
    const log = await runResetPhase(cleanupNodePhase, data);
    expect(changes(h)).toEqual([]);
    expect(await ls("etc/kubernetes/manifests")).toEqual(["etcd.yaml", "kube-apiserver.yaml"]);
    expect(await ls("var/lib/kubeforge")).toEqual(["node.json"]);
    expect(reported).toEqual(
      expect.arrayContaining([
        "[dryrun] Would run on local: systemctl stop kubelet",
        `[dryrun] Would run on local: umount ${VOLUME}`,
        `[dryrun] Would run on local: ${CRICTL} --runtime-endpoint ${CRI} stopp ${POD}`,
        "[dryrun] Would remove /etc/kubernetes/manifests/etcd.yaml",
        "[dryrun] Would remove /etc/kubernetes/pki/etcd and everything in it",
        "[dryrun] Would remove /etc/kubernetes/admin.conf",
        "[dryrun] Would remove /var/lib/kubeforge/node.json",
        "[dryrun] Would run on local: ip link delete kubeforge0",
      ]),
    );
    expect(reported).not.toContain("[dryrun] Would remove /etc/kubernetes/bootstrap-kubelet.conf");
    expect(log.lines).toContain("[reset] Would remove Kubernetes-managed containers");
    expect(log.lines).toContain(
      "[reset] Would delete contents of directories: [/etc/kubernetes/manifests /var/lib/kubelet /etc/kubernetes/pki]",
    );
  });
});
