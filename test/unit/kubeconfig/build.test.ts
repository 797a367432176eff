import { describe, expect, it } from "vitest";
import {
  createBasic,
  createWithCerts,
  createWithToken,
  renderKubeConfig,
} from "../../../src/kubeconfig/build.js";
import { currentEntries, decodeData, parseKubeConfig } from "../../../src/kubeconfig/parse.js";
import { kubeConfigFileSpecs } from "../../../src/kubeconfig/specs.js";

describe("kubeconfig builders (kubeadm util/kubeconfig CreateWithCerts)", () => {
  it("renders clientcmd's layout: sorted keys, base64 data, <user>@<cluster> context", () => {
    const config = createWithCerts(
      "https://10.0.0.1:6443",
      "kubernetes",
      "kubernetes-admin",
      "CA",
      "KEY",
      "CERT",
    );
    expect(renderKubeConfig(config, { preferences: true })).toBe(
      [
        "apiVersion: v1",
        "clusters:",
        "- cluster:",
        "    certificate-authority-data: Q0E=",
        "    server: https://10.0.0.1:6443",
        "  name: kubernetes",
        "contexts:",
        "- context:",
        "    cluster: kubernetes",
        "    user: kubernetes-admin",
        "  name: kubernetes-admin@kubernetes",
        "current-context: kubernetes-admin@kubernetes",
        "kind: Config",
        "preferences: {}",
        "users:",
        "- name: kubernetes-admin",
        "  user:",
        "    client-certificate-data: Q0VSVA==",
        "    client-key-data: S0VZ",
        "",
      ].join("\n"),
    );
  });

  it("omits preferences for releases whose client-go no longer writes it (v1.34+)", () => {
    const config = createWithCerts("https://10.0.0.1:6443", "kubernetes", "u", "CA", "K", "C");
    expect(renderKubeConfig(config, { preferences: false })).not.toContain("preferences");
    expect(renderKubeConfig(config, { preferences: true })).toContain("\npreferences: {}\n");
  });

  it("reads back what it writes", () => {
    const text = renderKubeConfig(
      createWithCerts("https://[fd00::1]:6443", "prod", "system:node:cp-1", "CA", "KEY", "CERT"),
      { preferences: false },
    );
    const entries = currentEntries(
      parseKubeConfig(text, "/etc/kubernetes/kubelet.conf"),
      "kubelet.conf",
    );
    expect(entries.contextName).toBe("system:node:cp-1@prod");
    expect(entries.cluster.server).toBe("https://[fd00::1]:6443");
    expect(decodeData(entries.cluster["certificate-authority-data"])?.toString()).toBe("CA");
    expect(decodeData(entries.user?.["client-key-data"])?.toString()).toBe("KEY");
  });

  it("builds token and credential-less variants", () => {
    expect(
      createWithToken(
        "https://a:6443",
        "c",
        "tls-bootstrap-token-user",
        "CA",
        "abcdef.0123456789abcdef",
      ).users,
    ).toEqual([{ name: "tls-bootstrap-token-user", user: { token: "abcdef.0123456789abcdef" } }]);
    expect(createBasic("https://a:6443", "c", "u", "CA").users).toEqual([]);
  });
});

describe("parseKubeConfig", () => {
  it.each([
    ["not yaml: [", /failed to load kubeconfig file \/k.conf: \/k.conf is not valid YAML/],
    ["- a list", /failed to load kubeconfig file \/k.conf: it is not a kubeconfig object/],
  ])("refuses %j naming the file", (text, message) => {
    expect(() => parseKubeConfig(text, "/k.conf")).toThrow(message);
  });

  it("names a missing context or cluster", () => {
    expect(() =>
      currentEntries(parseKubeConfig("current-context: x\n", "/k.conf"), "/k.conf"),
    ).toThrow("failed to find CurrentContext in Contexts of the kubeconfig file /k.conf");
    const noCluster =
      "current-context: x\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n";
    expect(() => currentEntries(parseKubeConfig(noCluster, "/k.conf"), "/k.conf")).toThrow(
      "failed to find the given CurrentContext Cluster in Clusters of the kubeconfig file /k.conf",
    );
  });
});

describe("init kubeconfig files (kubeadm getKubeConfigSpecsBase)", () => {
  it("has kubeadm's files, users, groups and endpoints in phase order (local mode off)", () => {
    expect(
      kubeConfigFileSpecs("cp-1", { kubeletLocalMode: false }).map((s) => [
        s.phase,
        s.fileName,
        s.clientName,
        s.organizations,
        s.endpoint,
      ]),
    ).toEqual([
      [
        "admin",
        "admin.conf",
        "kubernetes-admin",
        ["kubeadm:cluster-admins"],
        "controlPlaneEndpoint",
      ],
      [
        "super-admin",
        "super-admin.conf",
        "kubernetes-super-admin",
        ["system:masters"],
        "controlPlaneEndpoint",
      ],
      ["kubelet", "kubelet.conf", "system:node:cp-1", ["system:nodes"], "controlPlaneEndpoint"],
      [
        "controller-manager",
        "controller-manager.conf",
        "system:kube-controller-manager",
        [],
        "local",
      ],
      ["scheduler", "scheduler.conf", "system:kube-scheduler", [], "local"],
    ]);
  });

  it("points kubelet.conf at the local API server with ControlPlaneKubeletLocalMode", () => {
    const endpoints = (kubeletLocalMode: boolean) =>
      kubeConfigFileSpecs("cp-1", { kubeletLocalMode }).map((s) => `${s.phase}=${s.endpoint}`);
    expect(endpoints(true)).toEqual([
      "admin=controlPlaneEndpoint",
      "super-admin=controlPlaneEndpoint",
      "kubelet=local",
      "controller-manager=local",
      "scheduler=local",
    ]);
    expect(endpoints(false)[2]).toBe("kubelet=controlPlaneEndpoint");
  });
});
