import { existsSync, readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SshHost } from "../../../src/remote/ssh/host.js";
import { prepareHostSettings } from "../../../src/node/host-settings.js";
import { installKubeletService } from "../../../src/node/kubelet-service.js";
import {
  CONTAINERD_CONFIG_BACKUP,
  CONTAINERD_CRI_SOCKET,
  prepareContainerd,
} from "../../../src/node/runtime/containerd.js";
import { skipNodePreparation } from "../../support/machine-safety.js";
import { connectTestHost } from "../../support/testbed-connect.js";
import { createTestbed, type SshTestbed, type SshTestHost } from "../../support/testbed.js";

// Node preparation over SSH on isolated test hosts (test/support/testbed.ts): as root and as a
// user with password-less sudo. Each host has its own network namespace (its own sysctls: the
// net.* keys are per namespace), its own /etc (an overlay whose writes stay on the host),
// /etc/systemd/system bound to its rootfs, and the simulated node's systemctl and crictl first
// on root's PATH. modprobe fails there (no /lib/modules), as in a container: the modules must
// already be there. Installing packages stays off: /usr is the machine's own.
// Swap and kernel modules are the machine's, not the host's: when the machine has swap on, or
// could load overlay/br_netfilter (it has /lib/modules) and has not, a test host's "swapoff -a"
// or modprobe would change the machine itself, so these tests do not run then.

const skip = skipNodePreparation();

let bed: SshTestbed;
const hosts: SshHost[] = [];

beforeAll(async () => {
  if (skip) return;
  bed = await createTestbed(["prep-root", "prep-sudo"], { ssh: true });
}, 180_000);

afterAll(async () => {
  await Promise.all(hosts.map((h) => h.close()));
  await bed?.stop();
});

async function connect(h: SshTestHost, user: string): Promise<SshHost> {
  const host = await connectTestHost(h, user);
  hosts.push(host);
  return host;
}

const machineForwarding = () => readFile("/proc/sys/net/ipv4/ip_forward", "utf8");

describe.skipIf(skip).each([
  { user: "root", hostName: "prep-root" },
  { user: "kf", hostName: "prep-sudo" },
])("node preparation over SSH as $user", ({ user, hostName }) => {
  let h: SshTestHost;
  let host: SshHost;
  beforeAll(async () => {
    h = bed.host(hostName);
    host = await connect(h, user);
  });

  it("host settings: modules present, sysctls set in the host only, swap lines commented; then nothing to do", async () => {
    const before = await machineForwarding();
    const fstab = "UUID=1 / ext4 defaults 0 1\n/swap.img none swap sw 0 0\n";
    const w = await h.sshRun("cat > /etc/fstab", { stdin: fstab });
    expect(w.code, w.stderr).toBe(0);
    // A new network namespace copies the machine's IPv4 settings (net.core.devconf_inherit_init_net
    // 0), so the host starts from the kernel's default explicitly, whatever the machine has.
    expect((await h.sshRun("sysctl -qw net.ipv4.ip_forward=0")).code).toBe(0);
    expect((await h.sshRun("sysctl -n net.ipv4.ip_forward")).stdout.trim()).toBe("0");

    const lines: string[] = [];
    const first = await prepareHostSettings(host, {
      allowInstall: false,
      log: (l) => lines.push(l),
    });
    expect(first.changed).toEqual(
      expect.arrayContaining([
        "set net.ipv4.ip_forward=1",
        "wrote /etc/modules-load.d/kubeforge.conf",
        "wrote /etc/sysctl.d/kubeforge.conf",
        "commented out swap in /etc/fstab (original kept as /etc/fstab.kubeforge-orig)",
      ]),
    );
    // modprobe has no modules to load here; the kernel's own br_netfilter is accepted.
    expect(lines.some((l) => /^WARNING: could not load kernel module br_netfilter/.test(l))).toBe(
      !existsSync("/sys/module/br_netfilter"),
    );
    expect((await h.sshRun("sysctl -n net.ipv4.ip_forward")).stdout.trim()).toBe("1");
    expect((await h.sshRun("cat /etc/sysctl.d/kubeforge.conf")).stdout).toContain(
      "net.ipv4.ip_forward = 1",
    );
    expect((await h.sshRun("cat /etc/fstab")).stdout).toContain(
      "#kubeforge-swap-off# /swap.img none swap",
    );
    // The machine itself is untouched.
    expect(await machineForwarding()).toBe(before);
    expect(existsSync("/etc/sysctl.d/kubeforge.conf")).toBe(false);
    expect(existsSync("/etc/fstab.kubeforge-orig")).toBe(false);

    const logged: string[] = [];
    const second = await prepareHostSettings(host, {
      allowInstall: false,
      log: (l) => logged.push(l),
    });
    expect(second.changed).toEqual([]);
    expect(logged).toContain("host settings already in place");
  });

  it("kubelet service: unit and drop-in in /etc/systemd/system, enabled; then unchanged", async () => {
    const first = await installKubeletService(host, { kubeletPath: "/usr/local/bin/kubelet" });
    expect(first).toEqual({ changed: true });
    const unit = await readFile(h.path("/etc/systemd/system/kubelet.service"), "utf8");
    expect(unit).toContain("ExecStart=/usr/local/bin/kubelet\n");
    const dropIn = await readFile(
      h.path("/etc/systemd/system/kubelet.service.d/10-kubeadm.conf"),
      "utf8",
    );
    expect(dropIn).toContain("ExecStart=/usr/local/bin/kubelet $KUBELET_KUBECONFIG_ARGS");
    expect(await installKubeletService(host, { kubeletPath: "/usr/local/bin/kubelet" })).toEqual({
      changed: false,
    });
  });

  it("containerd: config written (the machine's kept as backup), CRI answers; then unchanged", async () => {
    const machineConfig = existsSync("/etc/containerd/config.toml")
      ? readFileSync("/etc/containerd/config.toml", "utf8")
      : undefined;
    const settings = {
      sandboxImage: "registry.k8s.io/pause:3.10",
      systemdCgroup: true,
      registryMirrors: { "docker.io": ["https://mirror.gcr.io"] },
    };
    const first = await prepareContainerd(host, settings, { allowInstall: false });
    expect(first).toEqual({ criSocket: CONTAINERD_CRI_SOCKET, changed: true, installed: false });
    // containerd itself, on the host, reads the file kubeforge wrote there.
    const dump = await h.sshRun("containerd --config /etc/containerd/config.toml config dump");
    expect(dump.code, dump.stderr).toBe(0);
    expect(dump.stdout).toMatch(/^\s*SystemdCgroup = true$/m);
    expect(dump.stdout).toMatch(/^\s*sandbox_image = "registry.k8s.io\/pause:3.10"$/m);
    expect((await h.sshRun("cat /etc/containerd/certs.d/docker.io/hosts.toml")).stdout).toContain(
      '[host."https://mirror.gcr.io"]',
    );
    if (machineConfig !== undefined) {
      expect((await h.sshRun(`cat ${CONTAINERD_CONFIG_BACKUP}`)).stdout).toBe(machineConfig);
      expect(readFileSync("/etc/containerd/config.toml", "utf8")).toBe(machineConfig);
    }
    const second = await prepareContainerd(host, settings, { allowInstall: false });
    expect(second.changed).toBe(false);
  });
});
