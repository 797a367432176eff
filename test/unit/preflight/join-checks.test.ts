// The list `kubeadm join` runs: names and order of JoinNodeChecks (checks.go, with
// addCommonChecks and checks_linux.go's addIPv4Checks/addIPv6Checks), and for a control plane
// the InitNodeChecks with isSecondaryControlPlane, for the configurations that change them.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultJoinConfig } from "../../../src/config/join-defaults.js";
import { decodeConfigDocuments } from "../../../src/config/load.js";
import type { JoinConfig } from "../../../src/config/types.js";
import type { Check } from "../../../src/node/preflight/checks.js";
import { initNodeChecks } from "../../../src/node/preflight/init-checks.js";
import { joinNodeChecks } from "../../../src/node/preflight/join-checks.js";
import { LocalHost } from "../../../src/remote/local.js";
import { type CommandStub, HostDouble, onPath } from "../../support/host-double.js";
import { testRelease } from "../../support/init-fixtures.js";
import { initConfig, COMMON_CHECKS } from "./fixtures.js";

let rootfs: string;
beforeAll(async () => {
  rootfs = await mkdtemp(join(tmpdir(), "kubeforge-join-checks-"));
});
afterAll(async () => {
  await rm(rootfs, { recursive: true, force: true });
});

const TOKEN = "abcdef.0123456789abcdef";
const noCRI: CommandStub[] = [
  onPath("crictl", undefined),
  { match: ["test", "-S"], result: { code: 1 } },
];

/** A defaulted JoinConfiguration from its YAML body, for node "w-1". */
function joinConfig(body: string): JoinConfig {
  const docs = decodeConfigDocuments(
    `apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\n${body}`,
    "join.yaml",
  );
  return defaultJoinConfig(docs, { nodeName: "w-1", advertiseAddress: "10.0.0.21" });
}

const tokenDiscovery = (endpoint: string) =>
  `discovery:\n  bootstrapToken: {token: ${TOKEN}, apiServerEndpoint: "${endpoint}", unsafeSkipCAVerification: true}\n`;
const controlPlane = "controlPlane: {localAPIEndpoint: {advertiseAddress: 10.0.0.21}}\n";

function host(commands: CommandStub[] = noCRI) {
  return new HostDouble(new LocalHost({ rootfs }), { commands });
}

async function joinNames(body: string) {
  const checks = await joinNodeChecks({ join: joinConfig(body), host: host(), proxyEnv: {} });
  return checks.map((c) => c.name());
}

const head = [
  "FileAvailable--etc-kubernetes-kubelet.conf",
  "FileAvailable--etc-kubernetes-bootstrap-kubelet.conf",
];
const workerCA = "FileAvailable--etc-kubernetes-pki-ca.crt";

describe("joinNodeChecks", () => {
  it("worker, token discovery of an IPv4 endpoint: the CA must not exist yet, HTTPProxy, ip_forward", async () => {
    expect(await joinNames(tokenDiscovery("10.0.0.4:6443"))).toEqual([
      ...head,
      ...COMMON_CHECKS,
      workerCA,
      "HTTPProxy",
      "FileContent--proc-sys-net-ipv4-ip_forward",
    ]);
  });

  it("token discovery of an IPv6 endpoint checks IPv6 forwarding instead", async () => {
    expect(await joinNames(tokenDiscovery("[fd00::4]:6443"))).toEqual([
      ...head,
      ...COMMON_CHECKS,
      workerCA,
      "HTTPProxy",
      "FileContent--proc-sys-net-ipv6-conf-default-forwarding",
    ]);
  });

  it("token discovery of a DNS name: HTTPProxy for the name, no forwarding check", async () => {
    expect((await joinNames(tokenDiscovery("cp.example.com:6443"))).slice(-2)).toEqual([
      workerCA,
      "HTTPProxy",
    ]);
  });

  it("file discovery adds neither HTTPProxy nor forwarding", async () => {
    expect(
      await joinNames("discovery: {file: {kubeConfigPath: /tmp/cluster-info.yaml}}\n"),
    ).toEqual([...head, ...COMMON_CHECKS, workerCA]);
  });

  it("a custom caCertPath is the worker's FileAvailable check", async () => {
    const names = await joinNames(`caCertPath: /opt/ca.pem\n${tokenDiscovery("10.0.0.4:6443")}`);
    expect(names).toContain("FileAvailable--opt-ca.pem");
    expect(names).not.toContain(workerCA);
  });

  it("no longer checks the manifests folder (kubeadm dropped it in PR #104942) nor bridge-nf-call-iptables", async () => {
    const names = await joinNames(tokenDiscovery("10.0.0.4:6443"));
    expect(names).not.toContain("DirAvailable--etc-kubernetes-manifests");
    expect(names.filter((n) => n.includes("bridge"))).toEqual([]);
  });

  it("control plane: no CA check, then init's checks for a secondary control plane", async () => {
    const cfg = joinConfig(controlPlane + tokenDiscovery("10.0.0.4:6443"));
    const joinChecks = await joinNodeChecks({ join: cfg, host: host(), proxyEnv: {} });
    const initChecks = await initNodeChecks(
      { cfg: initConfig(), release: testRelease(35), host: host(), proxyEnv: {} },
      { secondaryControlPlane: true, downloadCerts: true },
    );
    expect([...joinChecks, ...initChecks].map((c) => c.name())).toEqual([
      ...head,
      ...COMMON_CHECKS,
      "HTTPProxy",
      "FileContent--proc-sys-net-ipv4-ip_forward",
      // InitNodeChecks without the common and forwarding checks (already run as join checks)
      "NumCPU",
      "Mem",
      "KubernetesVersion",
      "Firewalld",
      "Port-6443",
      "Port-10259",
      "Port-10257",
      "FileAvailable--etc-kubernetes-manifests-kube-apiserver.yaml",
      "FileAvailable--etc-kubernetes-manifests-kube-controller-manager.yaml",
      "FileAvailable--etc-kubernetes-manifests-kube-scheduler.yaml",
      "FileAvailable--etc-kubernetes-manifests-etcd.yaml",
      "HTTPProxy",
      "HTTPProxyCIDR",
      "HTTPProxyCIDR",
      "Port-2379",
      "Port-2380",
      "DirAvailable--var-lib-etcd",
    ]);
  });
});

describe("what the join checks read", () => {
  const find = (checks: Check[], name: string) => checks.find((c) => c.name() === name)!;

  it('accepts a kubelet newer than any cluster: with version "" there is no skew check', async () => {
    const kubelet: CommandStub[] = [
      ...noCRI,
      onPath("kubelet", "/usr/bin/kubelet"),
      { match: ["/usr/bin/kubelet", "--version"], result: { stdout: "Kubernetes v1.99.0\n" } },
    ];
    const checks = await joinNodeChecks({
      join: joinConfig(tokenDiscovery("10.0.0.4:6443")),
      host: host(kubelet),
      proxyEnv: {},
    });
    expect(await find(checks, "KubeletVersion").check()).toEqual({ warnings: [], errors: [] });
  });

  it("still refuses a kubelet older than any supported cluster accepts", async () => {
    const kubelet: CommandStub[] = [
      ...noCRI,
      onPath("kubelet", "/usr/bin/kubelet"),
      { match: ["/usr/bin/kubelet", "--version"], result: { stdout: "Kubernetes v1.20.0\n" } },
    ];
    const checks = await joinNodeChecks({
      join: joinConfig(tokenDiscovery("10.0.0.4:6443")),
      host: host(kubelet),
      proxyEnv: {},
    });
    expect((await find(checks, "KubeletVersion").check()).errors).toEqual([
      'Kubelet version "1.20.0" is lower than kubeadm can support. Please upgrade kubelet',
    ]);
  });

  it("HTTPProxy asks about the discovery endpoint's host, through the proxy environment", async () => {
    const checks = await joinNodeChecks({
      join: joinConfig(tokenDiscovery("10.0.0.4:6443")),
      host: host(),
      proxyEnv: { HTTPS_PROXY: "http://proxy.example:3128" },
    });
    expect(await find(checks, "HTTPProxy").check()).toEqual({
      warnings: [
        'Connection to "https://10.0.0.4" uses proxy "http://proxy.example:3128". If that is not intended, adjust your proxy settings',
      ],
      errors: [],
    });
  });

  it("Hostname checks the joining node's name, not the cluster's", async () => {
    const checks = await joinNodeChecks({
      join: joinConfig(
        `nodeRegistration: {name: w-joining.invalid}\n${tokenDiscovery("10.0.0.4:6443")}`,
      ),
      host: host(),
      proxyEnv: {},
    });
    const r = await find(checks, "Hostname").check();
    expect(r.warnings[0]).toBe('hostname "w-joining.invalid" could not be reached');
  });
});
