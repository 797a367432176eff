import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LocalHost } from "../../../src/remote/local.js";
import {
  KUBEADM_DROP_IN_PATH,
  KUBELET_UNIT_PATH,
  installKubeletService,
  kubeadmDropIn,
  kubeletServiceUnit,
} from "../../../src/node/kubelet-service.js";
import { HostDouble, onPath } from "../../support/host-double.js";

// The unit and drop-in against the packaging templates (kubernetes/release
// cmd/krel/templates/latest/{kubelet/kubelet.service,kubeadm/10-kubeadm.conf}) after the
// docs' `sed "s:/usr/bin:/usr/local/bin:g"`, and their installation on a stubbed systemd.

// The docs' result for DOWNLOAD_DIR=/usr/local/bin, written out line by line.
const DOCS_UNIT = [
  "[Unit]",
  "Description=kubelet: The Kubernetes Node Agent",
  "Documentation=https://kubernetes.io/docs/",
  "Wants=network-online.target",
  "After=network-online.target",
  "",
  "[Service]",
  "ExecStart=/usr/local/bin/kubelet",
  "Restart=always",
  "StartLimitInterval=0",
  "RestartSec=10",
  "",
  "[Install]",
  "WantedBy=multi-user.target",
  "",
].join("\n");

describe("kubelet unit files", () => {
  it("are the packaging templates with the kubelet's path substituted", () => {
    expect(kubeletServiceUnit("/usr/local/bin/kubelet")).toBe(DOCS_UNIT);
    const dropIn = kubeadmDropIn("/usr/local/bin/kubelet");
    expect(dropIn.split("\n").filter((l) => !l.startsWith("#"))).toEqual([
      "[Service]",
      'Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"',
      'Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"',
      "EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env",
      "EnvironmentFile=-/etc/sysconfig/kubelet",
      "ExecStart=",
      "ExecStart=/usr/local/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS",
      "",
    ]);
    // A custom kubelet (the conformance-testing story) anywhere else.
    expect(kubeletServiceUnit("/opt/kubeforge/bin/kubelet-dev")).toContain(
      "ExecStart=/opt/kubeforge/bin/kubelet-dev\n",
    );
  });

  it.each(["kubelet", "/usr/local/bin/my kubelet", "/bin/kube$let", "/bin/%h", "/usr/bin/"])(
    "rejects kubelet path %j",
    (path) => {
      expect(() => kubeletServiceUnit(path)).toThrow(
        `kubelet path "${path}" must be an absolute file path`,
      );
    },
  );
});

describe("installKubeletService", () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), "kubeforge-kubelet-service-"));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  function node(systemd: { enabled: boolean; calls: string[] }, hasSystemd = true) {
    return new HostDouble(new LocalHost({ rootfs: root }), {
      commands: [
        onPath("systemctl", hasSystemd ? "/usr/bin/systemctl" : undefined),
        {
          match: ["systemctl", "is-enabled", "kubelet"],
          result: () =>
            systemd.enabled ? { stdout: "enabled\n" } : { code: 1, stdout: "disabled\n" },
        },
        {
          match: ["systemctl"],
          result: (a) => {
            systemd.calls.push(a.slice(1).join(" "));
            if (a[1] === "enable") systemd.enabled = true;
            return {};
          },
        },
      ],
    });
  }

  it("writes both files, reloads and enables; a second run changes nothing", async () => {
    const systemd = { enabled: false, calls: [] as string[] };
    const r = await installKubeletService(node(systemd), { kubeletPath: "/usr/local/bin/kubelet" });
    expect(r).toEqual({ changed: true });
    expect(systemd.calls).toEqual(["daemon-reload", "enable kubelet"]);
    expect(await readFile(join(root, KUBELET_UNIT_PATH), "utf8")).toBe(DOCS_UNIT);
    expect(await readFile(join(root, KUBEADM_DROP_IN_PATH), "utf8")).toBe(
      kubeadmDropIn("/usr/local/bin/kubelet"),
    );
    const again = await installKubeletService(node(systemd), {
      kubeletPath: "/usr/local/bin/kubelet",
    });
    expect(again).toEqual({ changed: false });
    expect(systemd.calls).toEqual(["daemon-reload", "enable kubelet"]);
  });

  it("rewrites for another kubelet path, and enables a disabled kubelet whose files are in place", async () => {
    const systemd = { enabled: false, calls: [] as string[] };
    await installKubeletService(node(systemd), { kubeletPath: "/usr/local/bin/kubelet" });
    const custom = await installKubeletService(node(systemd), { kubeletPath: "/opt/bin/kubelet" });
    expect(custom).toEqual({ changed: true });
    expect(await readFile(join(root, KUBELET_UNIT_PATH), "utf8")).toContain(
      "ExecStart=/opt/bin/kubelet\n",
    );
    systemd.enabled = false;
    systemd.calls = [];
    const r = await installKubeletService(node(systemd), { kubeletPath: "/opt/bin/kubelet" });
    expect(r).toEqual({ changed: true });
    expect(systemd.calls).toEqual(["enable kubelet"]);
  });

  it("fails clearly without systemd", async () => {
    const systemd = { enabled: false, calls: [] as string[] };
    await expect(
      installKubeletService(node(systemd, false), { kubeletPath: "/usr/local/bin/kubelet" }),
    ).rejects.toThrow(/the kubelet service needs systemd, and systemctl is not on the PATH/);
  });
});
