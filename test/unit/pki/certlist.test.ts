import { describe, expect, it } from "vitest";
import {
  CERTIFICATES,
  apiServerAltNames,
  certSpec,
  certificateValidity,
  certificatesFor,
  etcdAltNames,
  type CertName,
} from "../../../src/pki/certlist.js";
import { removeDuplicateAltNames } from "../../../src/pki/certs.js";
import { testRelease } from "../../support/init-fixtures.js";
import { testInitConfig, type InitOverrides } from "./fixtures.js";

const SVC_DNS = ["kubernetes", "kubernetes.default", "kubernetes.default.svc"];

function apiSANs(o: InitOverrides) {
  const warnings: string[] = [];
  const alt = removeDuplicateAltNames(
    apiServerAltNames(testInitConfig(o), (m) => warnings.push(m)),
  );
  return { ...alt, warnings };
}

describe("apiserver SANs (kubeadm GetAPIServerAltNames)", () => {
  it.each<[string, InitOverrides, { dns: string[]; ips: string[] }]>([
    [
      "IPv4 defaults",
      {},
      {
        dns: ["cp-1", ...SVC_DNS, "kubernetes.default.svc.cluster.local"],
        ips: ["10.96.0.1", "192.168.10.5"],
      },
    ],
    [
      "IPv6 service CIDR and advertise address",
      { serviceSubnet: "fd00:10:96::/112", advertiseAddress: "fd00:1::5", dnsDomain: "k8s.test" },
      {
        dns: ["cp-1", ...SVC_DNS, "kubernetes.default.svc.k8s.test"],
        ips: ["fd00:10:96::1", "fd00:1::5"],
      },
    ],
    [
      "dual-stack, IPv4 first: the first CIDR gives the service IP",
      { serviceSubnet: "10.96.0.0/16,fd00:10:96::/112" },
      {
        dns: ["cp-1", ...SVC_DNS, "kubernetes.default.svc.cluster.local"],
        ips: ["10.96.0.1", "192.168.10.5"],
      },
    ],
    [
      "dual-stack, IPv6 first",
      { serviceSubnet: "fd00:10:96::/112, 10.96.0.0/16" },
      {
        dns: ["cp-1", ...SVC_DNS, "kubernetes.default.svc.cluster.local"],
        ips: ["fd00:10:96::1", "192.168.10.5"],
      },
    ],
    [
      "controlPlaneEndpoint DNS name with port",
      { controlPlaneEndpoint: "api.example.com:6443" },
      {
        dns: ["api.example.com", "cp-1", ...SVC_DNS, "kubernetes.default.svc.cluster.local"],
        ips: ["10.96.0.1", "192.168.10.5"],
      },
    ],
    [
      "controlPlaneEndpoint IP without port",
      { controlPlaneEndpoint: "192.168.10.100" },
      {
        dns: ["cp-1", ...SVC_DNS, "kubernetes.default.svc.cluster.local"],
        ips: ["10.96.0.1", "192.168.10.5", "192.168.10.100"],
      },
    ],
    [
      "controlPlaneEndpoint bracketed IPv6 with port",
      { controlPlaneEndpoint: "[fd00::100]:8443" },
      {
        dns: ["cp-1", ...SVC_DNS, "kubernetes.default.svc.cluster.local"],
        ips: ["10.96.0.1", "192.168.10.5", "fd00::100"],
      },
    ],
    [
      "certSANs: IPs, names and wildcards; duplicates collapse",
      { certSANs: ["10.0.0.1", "lb.example.com", "*.example.com", "192.168.10.5", "KUBERNETES"] },
      {
        dns: [
          "*.example.com",
          "cp-1",
          ...SVC_DNS,
          "kubernetes.default.svc.cluster.local",
          "lb.example.com",
        ],
        ips: ["10.96.0.1", "192.168.10.5", "10.0.0.1"],
      },
    ],
  ])("%s", (_name, o, expected) => {
    const { dnsNames, ips } = apiSANs(o);
    expect(dnsNames).toEqual([...expected.dns].sort());
    expect(ips).toEqual(expected.ips);
  });

  it("drops invalid certSANs with kubeadm's warning", () => {
    const { dnsNames, ips, warnings } = apiSANs({
      certSANs: ["bad_name", "UPPER.example.com", "1.2.3.4.5", "ok.example"],
    });
    expect(dnsNames).toContain("ok.example");
    expect(dnsNames).not.toContain("bad_name");
    expect(ips).not.toContain("1.2.3.4.5");
    expect(warnings).toEqual([
      "'bad_name' was not added to the 'apiserver' SAN, because it is not a valid IP or RFC-1123 compliant DNS entry",
      "'UPPER.example.com' was not added to the 'apiserver' SAN, because it is not a valid IP or RFC-1123 compliant DNS entry",
    ]);
  });

  it.each<[InitOverrides, RegExp]>([
    [
      { advertiseAddress: "not-an-ip" },
      /localAPIEndpoint.advertiseAddress "not-an-ip" is not a valid/,
    ],
    [
      { serviceSubnet: "10.96.0.0" },
      /networking.serviceSubnet "10.96.0.0": unable to get the first IP/,
    ],
    [
      { controlPlaneEndpoint: "bad_host:6443" },
      /controlPlaneEndpoint "bad_host:6443" is not a valid address: host "bad_host" must be/,
    ],
    [
      { controlPlaneEndpoint: "api:99999" },
      /controlPlaneEndpoint "api:99999" is not a valid address/,
    ],
  ])("refuses %j", (o, message) => {
    expect(() => apiServerAltNames(testInitConfig(o), () => undefined)).toThrow(message);
  });
});

describe("etcd SANs (kubeadm getAltNames)", () => {
  it("names the node, localhost and the loopbacks, plus the configured extras", () => {
    const warnings: string[] = [];
    const cfg = testInitConfig({
      etcdServerCertSANs: ["etcd.example.com", "10.1.1.1", "no way"],
      etcdPeerCertSANs: ["peer.example.com"],
    });
    const server = etcdAltNames(cfg, "server", (m) => warnings.push(m));
    expect(server).toEqual({
      dnsNames: ["cp-1", "localhost", "etcd.example.com"],
      ips: ["192.168.10.5", "127.0.0.1", "::1", "10.1.1.1"],
    });
    expect(warnings).toEqual([
      "'no way' was not added to the 'etcd/server' SAN, because it is not a valid IP or RFC-1123 compliant DNS entry",
    ]);
    expect(etcdAltNames(cfg, "peer", () => undefined)).toEqual({
      dnsNames: ["cp-1", "localhost", "peer.example.com"],
      ips: ["192.168.10.5", "127.0.0.1", "::1"],
    });
  });
});

describe("certificate tree (kubeadm certlist.go)", () => {
  it("lists kubeadm's certificates in order, each CA before what it signs", () => {
    expect(CERTIFICATES.map((c) => `${c.name}:${c.baseName}:${c.caName ?? "-"}`)).toEqual([
      "ca:ca:-",
      "apiserver:apiserver:ca",
      "apiserver-kubelet-client:apiserver-kubelet-client:ca",
      "front-proxy-ca:front-proxy-ca:-",
      "front-proxy-client:front-proxy-client:front-proxy-ca",
      "etcd-ca:etcd/ca:-",
      "etcd-server:etcd/server:etcd-ca",
      "etcd-peer:etcd/peer:etcd-ca",
      "etcd-healthcheck-client:etcd/healthcheck-client:etcd-ca",
      "apiserver-etcd-client:apiserver-etcd-client:etcd-ca",
    ]);
  });

  it("has no etcd certificates with external etcd", () => {
    expect(certificatesFor(testInitConfig({ externalEtcd: true })).map((c) => c.name)).toEqual([
      "ca",
      "apiserver",
      "apiserver-kubelet-client",
      "front-proxy-ca",
      "front-proxy-client",
    ]);
    expect(certificatesFor(testInitConfig())).toHaveLength(10);
  });

  it.each<[CertName, string, string[], string[]]>([
    ["ca", "kubernetes", [], []],
    ["apiserver", "kube-apiserver", [], ["serverAuth"]],
    [
      "apiserver-kubelet-client",
      "kube-apiserver-kubelet-client",
      ["kubeadm:cluster-admins"],
      ["clientAuth"],
    ],
    ["front-proxy-ca", "front-proxy-ca", [], []],
    ["front-proxy-client", "front-proxy-client", [], ["clientAuth"]],
    ["etcd-ca", "etcd-ca", [], []],
    ["etcd-server", "node-a", [], ["serverAuth", "clientAuth"]],
    ["etcd-peer", "node-a", [], ["serverAuth", "clientAuth"]],
    ["etcd-healthcheck-client", "kube-etcd-healthcheck-client", [], ["clientAuth"]],
    ["apiserver-etcd-client", "kube-apiserver-etcd-client", [], ["clientAuth"]],
  ])("%s: CN=%s O=%j usages=%j", (name, cn, org, usages) => {
    const spec = certSpec(
      name,
      testInitConfig({ nodeName: "node-a" }),
      testRelease(),
      () => undefined,
    );
    expect([spec.commonName, spec.organization, spec.usages]).toEqual([cn, org, usages]);
  });

  it.each([
    ["v1.33.11", 33, ["kubeadm:cluster-admins"]],
    ["v1.33.12", 33, []],
    ["v1.34.7", 34, ["kubeadm:cluster-admins"]],
    ["v1.34.8", 34, []],
    ["v1.35.4", 35, ["kubeadm:cluster-admins"]],
    ["v1.35.5-rc.0", 35, ["kubeadm:cluster-admins"]],
    ["v1.35.5", 35, []],
    ["v1.36.0", 36, ["kubeadm:cluster-admins"]],
    ["v1.36.1", 36, []],
    ["v1.37.0", 37, []],
  ])("apiserver-kubelet-client of %s has O=%j (kubernetes/kubernetes#138957)", (v, m, org) => {
    const cfg = testInitConfig();
    cfg.cluster.kubernetesVersion = v;
    const spec = certSpec("apiserver-kubelet-client", cfg, testRelease(m), () => undefined);
    expect(spec.organization).toEqual(org);
  });
});

describe("certificate dates (kubeadm KubeadmCert.GetConfig)", () => {
  const now = new Date("2026-05-01T12:00:00Z");

  it("back-dates NotBefore by 5 minutes and adds the configured validity to now", () => {
    const cfg = testInitConfig();
    expect(certificateValidity(cfg, "ca", now)).toEqual({
      notBefore: new Date("2026-05-01T11:55:00Z"),
      notAfter: new Date(now.getTime() + 87600 * 3_600_000),
    });
    expect(certificateValidity(cfg, "leaf", now)).toEqual({
      notBefore: new Date("2026-05-01T11:55:00Z"),
      notAfter: new Date("2027-05-01T12:00:00Z"),
    });
  });

  it("follows certificateValidityPeriod and caCertificateValidityPeriod", () => {
    const cfg = testInitConfig({
      certificateValidityPeriod: "48h",
      caCertificateValidityPeriod: "720h0m0s",
    });
    expect(certificateValidity(cfg, "leaf", now).notAfter).toEqual(
      new Date("2026-05-03T12:00:00Z"),
    );
    expect(certificateValidity(cfg, "ca", now).notAfter).toEqual(new Date("2026-05-31T12:00:00Z"));
  });

  it("refuses a bad or non-positive period, naming the field", () => {
    expect(() =>
      certificateValidity(testInitConfig({ certificateValidityPeriod: "1y" }), "leaf", now),
    ).toThrow(/ClusterConfiguration.certificateValidityPeriod: "1y" is not a valid duration/);
    expect(() =>
      certificateValidity(testInitConfig({ caCertificateValidityPeriod: "0s" }), "ca", now),
    ).toThrow(/caCertificateValidityPeriod "0s" must be positive/);
  });
});
