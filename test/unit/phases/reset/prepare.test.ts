import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { prepareReset, RESET_DONE, type ResetRequest } from "../../../../src/cluster/reset.js";
import { renderInstanceConfig } from "../../../../src/manifests/kubelet.js";
import type { ClusterAccess, KubeClient, KubeObject } from "../../../../src/kube/types.js";
import { ReportingDryRunHost } from "../../../../src/remote/dry-run.js";
import type { LocalHost } from "../../../../src/remote/local.js";
import { HostDouble, presentPathsAre } from "../../../support/host-double.js";
import { recordingLogger, tempRootHost } from "../../../support/init-fixtures.js";
import { writeNodeFiles } from "./fixtures.js";

// prepareReset: what reset reads before any phase runs (kubeadm's newResetData, v1.35), with the
// API server there or gone.

let host: LocalHost;
let root: string;
let cleanup: () => Promise<void>;

beforeEach(async () => {
  ({ host, root, cleanup } = await tempRootHost());
});
afterEach(() => cleanup());

/** Which CRI sockets exist on the machine (the one command asking for all). */
function withSockets(...present: string[]): HostDouble {
  return new HostDouble(host, { commands: [presentPathsAre("-S", new Set(present))] });
}

/** An API whose kubeadm-config holds `clusterConfiguration`, or that fails with `error`. */
function api(answer: { clusterConfiguration: string } | Error): ClusterAccess {
  const client = {
    description: "/etc/kubernetes/admin.conf",
    get: (ref: { name: string }) =>
      answer instanceof Error
        ? Promise.reject(answer)
        : Promise.resolve({
            apiVersion: "v1",
            kind: "ConfigMap",
            metadata: { name: ref.name, namespace: "kube-system" },
            data: { ClusterConfiguration: answer.clusterConfiguration },
          } as KubeObject),
  } as unknown as KubeClient;
  return {
    clientFor: () => Promise.resolve(client),
    probe: () => Promise.reject(new Error("unused")),
  };
}

function request(
  over: Partial<ResetRequest> = {},
): ResetRequest & { log: ReturnType<typeof recordingLogger>; out: string[] } {
  const log = recordingLogger();
  const out: string[] = [];
  return {
    flags: {},
    host: withSockets(),
    dryRun: false,
    reporter: log,
    stdout: (t) => void out.push(t),
    log,
    out,
    ...over,
  };
}

const CLUSTER = `apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.35.0
certificatesDir: /srv/kubernetes/pki
etcd:
  local:
    dataDir: /srv/etcd
`;

describe("prepareReset: the CRI socket", () => {
  const FLAGS_ENV =
    'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///var/run/crio/crio.sock --pod-infra-container-image=registry.k8s.io/pause:3.10"\n';

  it.each([
    [
      "--cri-socket wins",
      { "/var/lib/kubelet/kubeadm-flags.env": FLAGS_ENV },
      "unix:///run/other.sock",
      [],
      "unix:///run/other.sock",
    ],
    [
      "the kubelet's flag",
      {
        "/var/lib/kubelet/kubeadm-flags.env": FLAGS_ENV,
        "/var/lib/kubelet/instance-config.yaml": renderInstanceConfig("unix:///x.sock"),
      },
      undefined,
      [],
      "unix:///var/run/crio/crio.sock",
    ],
    [
      "instance-config.yaml (NodeLocalCRISocket)",
      {
        "/var/lib/kubelet/kubeadm-flags.env": 'KUBELET_KUBEADM_ARGS=""\n',
        "/var/lib/kubelet/instance-config.yaml": renderInstanceConfig(
          "unix:///run/cri-dockerd.sock",
        ),
      },
      undefined,
      [],
      "unix:///run/cri-dockerd.sock",
    ],
    [
      "the kubelet's config.yaml",
      {
        "/var/lib/kubelet/config.yaml":
          "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncontainerRuntimeEndpoint: unix:///run/k3s.sock\n",
      },
      undefined,
      [],
      "unix:///run/k3s.sock",
    ],
    [
      "the one known socket present",
      {},
      undefined,
      ["/var/run/crio/crio.sock"],
      "unix:///var/run/crio/crio.sock",
    ],
    ["kubeadm's default", {}, undefined, [], "unix:///var/run/containerd/containerd.sock"],
  ])("%s", async (_name, files, flag, sockets, expected) => {
    await writeNodeFiles(root, files);
    const r = request({ host: withSockets(...sockets), flags: flag ? { criSocket: flag } : {} });
    expect((await prepareReset(r)).data.criSocket).toBe(expected);
  });

  it("prepends unix:// to a bare path, with kubeadm's warning", async () => {
    const r = request({ flags: { criSocket: "/run/containerd/containerd.sock" } });
    expect((await prepareReset(r)).data.criSocket).toBe("unix:///run/containerd/containerd.sock");
    expect(r.log.warnings[0]).toMatch(/Automatically prepending scheme "unix"/);
  });

  it("refuses to guess between two sockets", async () => {
    const r = request({
      host: withSockets("/var/run/containerd/containerd.sock", "/var/run/crio/crio.sock"),
    });
    await expect(prepareReset(r)).rejects.toThrow(
      /found multiple CRI endpoints on the host .*--cri-socket/,
    );
  });
});

describe("prepareReset: the cluster's configuration and the certificates directory", () => {
  beforeEach(() => writeNodeFiles(root, { "/etc/kubernetes/admin.conf": "kubeconfig" }));

  it("reads kubeadm-config when the API answers: certificatesDir and etcd come from it", async () => {
    const r = request({ api: api({ clusterConfiguration: CLUSTER }) });
    const { data } = await prepareReset(r);
    expect(data.certificatesDir).toBe("/srv/kubernetes/pki");
    expect(data.clusterConfiguration?.etcd?.local?.dataDir).toBe("/srv/etcd");
    expect(data.client).toBeDefined();
    expect(r.log.lines).toEqual([
      "[reset] Reading configuration from the cluster...",
      "[reset] FYI: You can look at this config file with 'kubectl -n kube-system get cm kubeadm-config -o yaml'",
    ]);
  });

  it("--cert-dir wins over the cluster's", async () => {
    const r = request({
      api: api({ clusterConfiguration: CLUSTER }),
      flags: { certificatesDir: "/opt/pki/" },
    });
    expect((await prepareReset(r)).data.certificatesDir).toBe("/opt/pki");
  });

  it("goes on with the defaults, warning, when the API server is gone", async () => {
    const r = request({ api: api(new Error("connect ECONNREFUSED 10.0.0.4:6443")) });
    const { data } = await prepareReset(r);
    expect([data.certificatesDir, data.clusterConfiguration, data.client]).toEqual([
      "/etc/kubernetes/pki",
      undefined,
      undefined,
    ]);
    expect(r.log.warnings).toEqual([
      "[reset] Unable to fetch the kubeadm-config ConfigMap from cluster: connect ECONNREFUSED 10.0.0.4:6443",
    ]);
  });

  it("does not ask the API at all without a kubeconfig (a worker)", async () => {
    await host.remove("/etc/kubernetes/admin.conf");
    let asked = false;
    const api: ClusterAccess = {
      clientFor: () => ((asked = true), Promise.reject(new Error("no"))),
      probe: () => Promise.reject(new Error("no")),
    };
    const r = request({ api });
    await prepareReset(r);
    expect([asked, r.log.output]).toEqual([false, []]);
  });

  it.each([
    ["pki", /--cert-dir: "pki" is not an absolute path/],
    ["/", /--cert-dir: refusing to delete the contents of "\/"/],
  ])("refuses --cert-dir %s", async (dir, error) => {
    await expect(prepareReset(request({ flags: { certificatesDir: dir } }))).rejects.toThrow(error);
  });
});

describe("prepareReset: flags and the run", () => {
  it("validates --ignore-preflight-errors as kubeadm does", async () => {
    await expect(
      prepareReset(request({ flags: { ignorePreflightErrors: ["all", "Swap"] } })),
    ).rejects.toThrow(/don't specify individual checks if 'all' is used/);
  });

  it("passes --skip-phases and --force on; unknown phases fail before anything runs", async () => {
    const p = await prepareReset(request({ flags: { skipPhases: ["nope"], force: true } }));
    expect(p.data.askToConfirm).toBe(false);
    await expect(p.runner.run(p.data, { skipPhases: p.skipPhases })).rejects.toThrow(
      /invalid phase name "nope" in --skip-phases: valid names are preflight, remove-etcd-member, cleanup-node/,
    );
  });

  it("prints the closing reminders on stdout", async () => {
    const r = request();
    (await prepareReset(r)).done();
    expect(r.out).toEqual([RESET_DONE]);
    expect(RESET_DONE).toMatch(/network filtering rules/);
    expect(RESET_DONE).toContain(
      "https://k8s.io/docs/reference/setup-tools/kubeadm/kubeadm-reset/",
    );
  });
});

describe("ReportingDryRunHost", () => {
  it("reads the real machine and reports, without making, every change", async () => {
    await writeNodeFiles(root, {
      "/etc/kubernetes/admin.conf": "kubeconfig",
      "/var/lib/kubelet/pki/a.pem": "pem",
    });
    const reported: string[] = [];
    const dry = new ReportingDryRunHost(host, (l) => reported.push(l));
    expect((await dry.readFile("/etc/kubernetes/admin.conf")).toString()).toBe("kubeconfig");
    expect(dry.rootfs).toBe(root);
    await dry.remove("/etc/kubernetes/admin.conf");
    await dry.remove("/var/lib/kubelet/pki", { recursive: true });
    await dry.remove("/etc/kubernetes/missing.conf");
    await dry.writeFile("/etc/kubeforge/x", "data", 0o600);
    await dry.mkdirp("/etc/kubeforge");
    expect((await dry.exec(["systemctl", "stop", "kubelet"])).code).toBe(0);
    expect((await dry.exec(["echo", "read"], { readOnly: true })).stdout).toBe("read\n");
    expect(reported).toEqual([
      "[dryrun] Would remove /etc/kubernetes/admin.conf",
      "[dryrun] Would remove /var/lib/kubelet/pki and everything in it",
      "[dryrun] Would write /etc/kubeforge/x (mode 0600)",
      "[dryrun] Would create the directory /etc/kubeforge",
      "[dryrun] Would run on local: systemctl stop kubelet",
    ]);
    expect((await readdir(join(root, "etc"))).sort()).toEqual(["kubernetes"]);
    expect(await readdir(join(root, "var/lib/kubelet/pki"))).toEqual(["a.pem"]);
  });

  it("shows what it reported removed as gone, as a real removal would leave it", async () => {
    await writeNodeFiles(root, {
      "/etc/kubernetes/admin.conf": "kubeconfig",
      "/etc/kubernetes/kubelet.conf": "kubeconfig",
      "/var/lib/kubelet/pki/a.pem": "pem",
    });
    const reported: string[] = [];
    const dry = new ReportingDryRunHost(host, (l) => reported.push(l));
    await dry.remove("/etc/kubernetes/admin.conf");
    await dry.remove("/var/lib/kubelet/pki", { recursive: true });
    expect(await dry.exists("/etc/kubernetes/admin.conf")).toBe(false);
    expect(await dry.stat("/var/lib/kubelet/pki/a.pem")).toBeUndefined();
    await expect(dry.readFile("/var/lib/kubelet/pki/a.pem")).rejects.toMatchObject({
      code: "ENOENT",
    });
    expect(await dry.readDir("/etc/kubernetes")).toEqual(["kubelet.conf"]);
    await dry.remove("/etc/kubernetes/admin.conf");
    expect(reported).toHaveLength(2);
    expect((await readdir(join(root, "etc/kubernetes"))).sort()).toEqual([
      "admin.conf",
      "kubelet.conf",
    ]);
  });

  it("is what a dry run's phases see", async () => {
    const { data } = await prepareReset(request({ dryRun: true }));
    expect(data.host).toBeInstanceOf(ReportingDryRunHost);
    expect(data.askToConfirm).toBe(false);
    expect(data.dryRun).toBe(true);
  });
});
