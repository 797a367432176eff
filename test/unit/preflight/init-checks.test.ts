// The list `kubeadm init` runs: names and order (checks.go InitNodeChecks + addCommonChecks +
// checks_linux.go), for the configurations that change it.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { initNodeChecks } from "../../../src/node/preflight/init-checks.js";
import { LocalHost } from "../../../src/remote/local.js";
import { type CommandStub, HostDouble, onPath } from "../../support/host-double.js";
import { testRelease } from "../../support/init-fixtures.js";
import { type ConfigOverrides, initConfig, COMMON_CHECKS } from "./fixtures.js";

let rootfs: string;
beforeAll(async () => {
  rootfs = await mkdtemp(join(tmpdir(), "kubeforge-preflight-list-"));
});
afterAll(async () => {
  await rm(rootfs, { recursive: true, force: true });
});

const crictlAbsent = onPath("crictl", undefined);
const socketAbsent: CommandStub = { match: ["test", "-S"], result: { code: 1 } };
const crictlWorks: CommandStub[] = [
  onPath("crictl", "/usr/bin/crictl"),
  { match: ["/usr/bin/crictl"], result: { stdout: "RuntimeName: containerd\n" } },
];

async function names(
  o: ConfigOverrides,
  cri: CommandStub[] = [crictlAbsent, socketAbsent],
  join: { secondaryControlPlane?: boolean; downloadCerts?: boolean } = {},
) {
  const host = new HostDouble(new LocalHost({ rootfs }), { commands: cri });
  const warnings: string[] = [];
  const checks = await initNodeChecks(
    { cfg: initConfig(o), release: testRelease(35), host, proxyEnv: {} },
    { warn: (l) => void warnings.push(l), ...join },
  );
  return { names: checks.map((c) => c.name()), warnings };
}

const head = (bindPort = 6443) => [
  "NumCPU",
  "Mem",
  "KubernetesVersion",
  "Firewalld",
  `Port-${bindPort}`,
  "Port-10259",
  "Port-10257",
  "FileAvailable--etc-kubernetes-manifests-kube-apiserver.yaml",
  "FileAvailable--etc-kubernetes-manifests-kube-controller-manager.yaml",
  "FileAvailable--etc-kubernetes-manifests-kube-scheduler.yaml",
  "FileAvailable--etc-kubernetes-manifests-etcd.yaml",
  "HTTPProxy",
];
const ipv4 = [
  "FileContent--proc-sys-net-bridge-bridge-nf-call-iptables",
  "FileContent--proc-sys-net-ipv4-ip_forward",
];
const ipv6 = [
  "FileContent--proc-sys-net-bridge-bridge-nf-call-ip6tables",
  "FileContent--proc-sys-net-ipv6-conf-default-forwarding",
];
const localEtcd = (dir = "-var-lib-etcd") => ["Port-2379", "Port-2380", `DirAvailable-${dir}`];

describe("initNodeChecks", () => {
  it("single-stack IPv4 with local etcd and no pod subnet (an empty HTTPProxyCIDR, as kubeadm)", async () => {
    const r = await names({});
    expect(r.names).toEqual([
      ...head(),
      "HTTPProxyCIDR",
      "HTTPProxyCIDR",
      ...COMMON_CHECKS,
      ...ipv4,
      ...localEtcd(),
    ]);
    expect(r.warnings).toEqual([
      "[preflight] WARNING: Couldn't create the interface used for talking to the container runtime: no container runtime socket at /var/run/containerd/containerd.sock",
    ]);
  });

  it("adds CRI first among the common checks when the runtime answers, then ContainerRuntimeVersion (kubeadm 1.35+)", async () => {
    const r = await names({}, crictlWorks);
    expect(r.names.slice(head().length + 2, head().length + 5)).toEqual([
      "CRI",
      "ContainerRuntimeVersion",
      "Swap",
    ]);
    expect(r.warnings).toEqual([]);
  });

  it("dual-stack checks both forwarding settings and every CIDR for proxies", async () => {
    const r = await names({
      serviceSubnet: "10.96.0.0/12,fd00:10:96::/112",
      podSubnet: "10.244.0.0/16,fd00:10:244::/56",
      bindPort: 7443,
    });
    expect(r.names).toEqual([
      ...head(7443),
      "HTTPProxyCIDR",
      "HTTPProxyCIDR",
      "HTTPProxyCIDR",
      "HTTPProxyCIDR",
      ...COMMON_CHECKS,
      ...ipv4,
      ...ipv6,
      ...localEtcd(),
    ]);
  });

  it("single-stack IPv6 checks only IPv6 forwarding", async () => {
    const r = await names({
      advertiseAddress: "fd00::10",
      serviceSubnet: "fd00:10:96::/112",
      podSubnet: "fd00:10:244::/56",
    });
    expect(r.names.filter((n) => n.startsWith("FileContent"))).toEqual(ipv6);
  });

  it("external etcd: no etcd ports or data dir, but its client certificates must exist", async () => {
    const r = await names({
      externalEtcd: {
        endpoints: ["https://10.0.0.5:2379"],
        caFile: "/etc/etcd/ca.crt",
        certFile: "/etc/etcd/client.crt",
        keyFile: "/etc/etcd/client.key",
      },
    });
    expect(r.names.slice(-3)).toEqual([
      "ExternalEtcdClientCertificates",
      "ExternalEtcdClientCertificates",
      "ExternalEtcdClientCertificates",
    ]);
    expect(r.names).not.toContain("Port-2379");
  });

  it.each([
    ["init", {}, 3],
    ["a control-plane join without --certificate-key", { secondaryControlPlane: true }, 3],
    [
      "a control-plane join with --certificate-key (download-certs writes them later)",
      { secondaryControlPlane: true, downloadCerts: true },
      0,
    ],
  ])("external etcd client certificates are checked for %s", async (_, join, count) => {
    const externalEtcd = {
      endpoints: ["https://10.0.0.5:2379"],
      caFile: "/etc/etcd/ca.crt",
      certFile: "/etc/etcd/client.crt",
      keyFile: "/etc/etcd/client.key",
    };
    const r = await names({ externalEtcd }, undefined, join);
    expect(r.names.filter((n) => n === "ExternalEtcdClientCertificates")).toHaveLength(count);
  });

  it("uses the configured etcd data dir", async () => {
    const r = await names({ etcdDataDir: "/data/etcd" });
    expect(r.names.at(-1)).toBe("DirAvailable--data-etcd");
  });

  it("requires conntrack only for Kubernetes older than 1.32", async () => {
    expect((await names({ kubernetesVersion: "v1.31.4" })).names).toContain(
      "FileExisting-conntrack",
    );
    expect((await names({ kubernetesVersion: "v1.32.0" })).names).not.toContain(
      "FileExisting-conntrack",
    );
  });

  it.each([
    ["0\n", "/proc/sys/net/bridge/bridge-nf-call-iptables contents are not set to 1"],
    [null, "/proc/sys/net/bridge/bridge-nf-call-iptables does not exist"],
  ])(
    "bridge-nf-call-iptables (a kubeforge addition, kubeadm dropped it in 1.30) only warns: %j",
    async (content, message) => {
      const host = new HostDouble(new LocalHost({ rootfs }), {
        commands: [crictlAbsent, socketAbsent],
        files: { "/proc/sys/net/bridge/bridge-nf-call-iptables": content },
      });
      const checks = await initNodeChecks(
        { cfg: initConfig(), release: testRelease(35), host, proxyEnv: {} },
        {},
      );
      const bridge = checks.find(
        (c) => c.name() === "FileContent--proc-sys-net-bridge-bridge-nf-call-iptables",
      );
      expect(await bridge?.check()).toEqual({ warnings: [message], errors: [] });
      // while ip_forward stays an error, as in kubeadm
      const forward = checks.find((c) => c.name() === "FileContent--proc-sys-net-ipv4-ip_forward");
      const ipForwardOn = (await host.readFile("/proc/sys/net/ipv4/ip_forward"))
        .toString()
        .startsWith("1");
      expect((await forward?.check())?.errors).toEqual(
        ipForwardOn ? [] : ["/proc/sys/net/ipv4/ip_forward contents are not set to 1"],
      );
    },
  );
});
