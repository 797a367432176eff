import { describe, expect, it } from "vitest";
import { extraArgsKeepOrder } from "../../../src/config/patch-level.js";
import type { Arg } from "../../../src/config/types.js";
import { releaseFor } from "../../../src/config/versions.js";
import { controlPlanePods } from "../../../src/manifests/control-plane.js";
import { initKubeletFlagsEnv } from "../../../src/manifests/kubelet.js";
import { argumentsToCommand } from "../../../src/manifests/static-pod.js";
import { initConfig } from "./fixtures.js";

const arg = (name: string, value: string): Arg => ({ name, value });

// kubeadm's util/arguments_test.go TestArgumentsToCommand: [name, base, overrides, before
// kubernetes/kubernetes#135400 (every argument sorted), after it (base sorted, overrides in order)].
const KUBEADM_CASES: [string, Arg[], Arg[], string[], string[]][] = [
  [
    "override an argument from the base",
    [arg("admission-control", "NamespaceLifecycle"), arg("allow-privileged", "true")],
    [arg("admission-control", "NamespaceLifecycle,LimitRanger")],
    ["--admission-control=NamespaceLifecycle,LimitRanger", "--allow-privileged=true"],
    ["--allow-privileged=true", "--admission-control=NamespaceLifecycle,LimitRanger"],
  ],
  [
    "override an argument from the base and add duplicate",
    [arg("token-auth-file", "/token"), arg("tls-sni-cert-key", "/some/path/")],
    [arg("tls-sni-cert-key", "/some/new/path"), arg("tls-sni-cert-key", "/some/new/path/subpath")],
    [
      "--tls-sni-cert-key=/some/new/path",
      "--tls-sni-cert-key=/some/new/path/subpath",
      "--token-auth-file=/token",
    ],
    [
      "--token-auth-file=/token",
      "--tls-sni-cert-key=/some/new/path",
      "--tls-sni-cert-key=/some/new/path/subpath",
    ],
  ],
  [
    "override all duplicate arguments from base",
    [
      arg("token-auth-file", "/token"),
      arg("tls-sni-cert-key", "foo"),
      arg("tls-sni-cert-key", "bar"),
    ],
    [arg("tls-sni-cert-key", "/some/new/path")],
    ["--tls-sni-cert-key=/some/new/path", "--token-auth-file=/token"],
    ["--token-auth-file=/token", "--tls-sni-cert-key=/some/new/path"],
  ],
  [
    "allow empty strings in base",
    [arg("allow-privileged", "true"), arg("something-that-allows-empty-string", "")],
    [arg("admission-control", "NamespaceLifecycle,LimitRanger")],
    [
      "--admission-control=NamespaceLifecycle,LimitRanger",
      "--allow-privileged=true",
      "--something-that-allows-empty-string=",
    ],
    [
      "--allow-privileged=true",
      "--something-that-allows-empty-string=",
      "--admission-control=NamespaceLifecycle,LimitRanger",
    ],
  ],
  [
    "allow empty strings in overrides",
    [arg("allow-privileged", "true"), arg("something-that-allows-empty-string", "foo")],
    [
      arg("admission-control", "NamespaceLifecycle,LimitRanger"),
      arg("something-that-allows-empty-string", ""),
    ],
    [
      "--admission-control=NamespaceLifecycle,LimitRanger",
      "--allow-privileged=true",
      "--something-that-allows-empty-string=",
    ],
    [
      "--allow-privileged=true",
      "--admission-control=NamespaceLifecycle,LimitRanger",
      "--something-that-allows-empty-string=",
    ],
  ],
  [
    "base are sorted and overrides are not",
    [arg("b", "true"), arg("c", "true"), arg("a", "true")],
    [arg("e", "true"), arg("b", "true"), arg("d", "true")],
    ["--a=true", "--b=true", "--c=true", "--d=true", "--e=true"],
    ["--a=true", "--c=true", "--e=true", "--b=true", "--d=true"],
  ],
];

describe("ArgumentsToCommand before and after kubernetes/kubernetes#135400", () => {
  it.each(KUBEADM_CASES)("%s", (_name, base, overrides, sorted, kept) => {
    expect(argumentsToCommand(base, overrides, false)).toEqual(sorted);
    expect(argumentsToCommand(base, overrides, true)).toEqual(kept);
  });
});

describe("which kubeadm keeps the user's order: the version table, per patch", () => {
  // #135400 on master (1.36), cherry-picked as #135851 (1.33), #135852 (1.34), #135853 (1.35),
  // released on 2026-02-10 in v1.35.1, v1.34.4 and v1.33.8.
  it.each<[string, boolean]>([
    ["v1.33.7", false],
    ["v1.33.8", true],
    ["v1.34.3", false],
    ["v1.34.4", true],
    ["v1.35.0", false],
    ["v1.35.1-rc.0", false],
    ["v1.35.1", true],
    ["v1.35.8", true],
    ["v1.36.0", true],
    ["v1.37.1", true],
  ])("%s: %s", (version, keeps) => {
    expect(extraArgsKeepOrder(version, releaseFor(version))).toBe(keeps);
  });
});

describe("the order in the written files", () => {
  // The case: the first --service-account-issuer signs tokens.
  const issuers = [
    arg("service-account-issuer", "https://new.example.com"),
    arg("service-account-issuer", "https://kubernetes.default.svc.cluster.local"),
  ];
  const apiserverIssuers = (version: string) => {
    const cfg = initConfig((c) => {
      c.cluster.kubernetesVersion = version;
      c.cluster.apiServer.extraArgs = issuers;
    });
    const pod = controlPlanePods(cfg, releaseFor(version), {
      existingHostPaths: new Set(),
      proxyEnv: {},
      externalCA: false,
    })["kube-apiserver"];
    return pod.spec.containers[0]!.command.filter((c) => c.startsWith("--service-account-issuer"));
  };

  it("v1.35.0 sorts the issuers; v1.35.1 keeps the user's first one first, after the defaults", () => {
    expect(apiserverIssuers("v1.35.0")).toEqual([
      "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
      "--service-account-issuer=https://new.example.com",
    ]);
    expect(apiserverIssuers("v1.35.1")).toEqual([
      "--service-account-issuer=https://new.example.com",
      "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
    ]);
  });

  it("kubeletExtraArgs follow the same rule in kubeadm-flags.env", () => {
    const flags = (version: string) =>
      initKubeletFlagsEnv(
        initConfig((c) => {
          c.cluster.kubernetesVersion = version;
          c.init.nodeRegistration.kubeletExtraArgs = [arg("v", "4"), arg("max-pods", "200")];
        }),
        releaseFor(version),
        "cp-1",
      );
    expect(flags("v1.35.0")).toBe('KUBELET_KUBEADM_ARGS="--max-pods=200 --v=4"\n');
    expect(flags("v1.35.1")).toBe('KUBELET_KUBEADM_ARGS="--v=4 --max-pods=200"\n');
  });
});
