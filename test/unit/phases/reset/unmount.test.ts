import { mkdir, symlink } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  machinePath,
  mountPointsUnder,
  resolveKubeletDir,
  unmountUnder,
} from "../../../../src/phases/reset/unmount.js";
import { LocalHost } from "../../../../src/remote/local.js";
import { HostDouble } from "../../../support/host-double.js";
import { tempRootHost } from "../../../support/init-fixtures.js";

const PROC_MOUNTS = [
  "/dev/sda1 / ext4 rw,relatime 0 0",
  "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0",
  // The kubelet directory itself may be a mount (a separate disk): it stays.
  "/dev/sdb1 /var/lib/kubelet ext4 rw,relatime 0 0",
  "tmpfs /var/lib/kubelet/pods/a1/volumes/kubernetes.io~projected/token tmpfs rw 0 0",
  "tmpfs /var/lib/kubelet2/pods/x tmpfs rw 0 0",
  "shm /var/lib/kubelet/pods/b2/volumes/kubernetes.io~empty-dir/my\\040cache tmpfs rw 0 0",
  "tmpfs /var/lib/kubelet/pods/a1/volumes/kubernetes.io~projected/token/nested tmpfs rw 0 0",
  "",
].join("\n");

describe("mountPointsUnder", () => {
  it.each([
    [
      "/var/lib/kubelet",
      [
        "/var/lib/kubelet/pods/a1/volumes/kubernetes.io~projected/token/nested",
        "/var/lib/kubelet/pods/b2/volumes/kubernetes.io~empty-dir/my cache",
        "/var/lib/kubelet/pods/a1/volumes/kubernetes.io~projected/token",
      ],
    ],
    [
      "/var/lib/kubelet/",
      [
        "/var/lib/kubelet/pods/a1/volumes/kubernetes.io~projected/token/nested",
        "/var/lib/kubelet/pods/b2/volumes/kubernetes.io~empty-dir/my cache",
        "/var/lib/kubelet/pods/a1/volumes/kubernetes.io~projected/token",
      ],
    ],
    ["/var/lib/kubelet2", ["/var/lib/kubelet2/pods/x"]],
    ["/srv/kubelet", []],
  ])("below %s: strictly inside, last mounted first, escapes decoded", (dir, expected) => {
    expect(mountPointsUnder(PROC_MOUNTS, dir)).toEqual(expected);
  });
});

describe("unmountUnder", () => {
  const real = new LocalHost();

  it("unmounts every mount below the directory, as root, deepest first", async () => {
    const host = new HostDouble(real, {
      files: { "/proc/mounts": PROC_MOUNTS },
      commands: [{ match: ["umount"], result: { code: 0 } }],
    });
    const done = await unmountUnder(host, "/var/lib/kubelet");
    expect(done).toHaveLength(3);
    expect(host.calls.map((c) => [c.argv, c.opts.sudo])).toEqual(
      done.map((m) => [["umount", m], true]),
    );
  });

  it("tries every mount, then fails naming each one that stayed mounted", async () => {
    const busy = "/var/lib/kubelet/pods/b2/volumes/kubernetes.io~empty-dir/my cache";
    const host = new HostDouble(real, {
      files: { "/proc/mounts": PROC_MOUNTS },
      commands: [
        {
          match: (argv) => argv[0] === "umount" && argv[1] === busy,
          result: { code: 32, stderr: `umount: ${busy}: target is busy.` },
        },
        { match: ["umount"], result: { code: 0 } },
      ],
    });
    await expect(unmountUnder(host, "/var/lib/kubelet")).rejects.toThrow(
      /encountered the following errors while unmounting directories in "\/var\/lib\/kubelet\/": \[failed to unmount "\/var\/lib\/kubelet\/pods\/b2\/volumes\/kubernetes.io~empty-dir\/my cache": .*target is busy\.\]/,
    );
    expect(host.calls.filter((c) => c.argv[0] === "umount")).toHaveLength(3);
  });
});

describe("resolveKubeletDir", () => {
  let cleanup: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await cleanup?.();
  });

  it("reports a kubelet directory that does not exist as missing", async () => {
    const t = await tempRootHost();
    cleanup = t.cleanup;
    expect(await resolveKubeletDir(t.host)).toEqual({
      ok: false,
      missing: true,
      reason: "lstat /var/lib/kubelet: no such file or directory",
    });
  });

  it("resolves symbolic links to the machine path /proc/mounts uses (under --rootfs too)", async () => {
    const t = await tempRootHost();
    cleanup = t.cleanup;
    await mkdir(join(t.root, "data/kubelet"), { recursive: true });
    await mkdir(join(t.root, "var/lib"), { recursive: true });
    await symlink(join(t.root, "data/kubelet"), join(t.root, "var/lib/kubelet"));
    expect(machinePath(t.host, "/var/lib/kubelet")).toBe(join(t.root, "var/lib/kubelet"));
    expect(await resolveKubeletDir(t.host)).toEqual({
      ok: true,
      realPath: join(t.root, "data/kubelet"),
    });
  });
});
