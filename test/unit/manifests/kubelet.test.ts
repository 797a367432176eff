import { describe, expect, it } from "vitest";
import type { Release } from "../../../src/config/release.js";
import {
  featureGateEnabled,
  goQuote,
  initKubeletFlagsEnv,
  kubeletFlagArgs,
  kubeletHostname,
  renderInstanceConfig,
  renderKubeletFlagsEnv,
  taintToString,
  withResolvConf,
  type KubeletFlagsInput,
} from "../../../src/manifests/kubelet.js";
import { initConfig, release133, release135 } from "./fixtures.js";

const SOCKET = "unix:///var/run/containerd/containerd.sock";

function input(
  edit: Partial<KubeletFlagsInput> = {},
  reg: Partial<KubeletFlagsInput["nodeRegistration"]> = {},
): KubeletFlagsInput {
  return {
    nodeRegistration: { name: "cp-1", criSocket: SOCKET, taints: [], kubeletExtraArgs: [], ...reg },
    hostname: "cp-1",
    pauseImage: undefined,
    nodeLocalCRISocket: false,
    registerTaintsUsingFlags: false,
    keepExtraArgsOrder: false,
    ...edit,
  };
}

describe("goQuote (Go's %q)", () => {
  const cases: [string, string][] = [
    ["plain", '"plain"'],
    ["", '""'],
    ['say "hi"', '"say \\"hi\\""'],
    ["back\\slash", '"back\\\\slash"'],
    ["tab\tnew\nline\r", '"tab\\tnew\\nline\\r"'],
    ["bell\x07 nul\x00 del\x7f", '"bell\\a nul\\x00 del\\x7f"'],
    ["héllo wörld ✓", '"héllo wörld ✓"'],
    ["zero\u200bwidth", '"zero\\u200bwidth"'],
    ["nbsp\u00a0", '"nbsp\\u00a0"'],
    ["emoji 😀", '"emoji 😀"'],
  ];
  for (const [text, want] of cases) {
    it(JSON.stringify(text), () => expect(goQuote(text)).toBe(want));
  }
});

describe("kubeadm-flags.env", () => {
  it("v1.33 init: CRI endpoint and pause image flags", () => {
    const cfg = initConfig((c) => (c.cluster.kubernetesVersion = "v1.33.0"));
    expect(initKubeletFlagsEnv(cfg, release133(), "cp-1")).toBe(
      'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock --pod-infra-container-image=registry.k8s.io/pause:3.10"\n',
    );
  });

  it("v1.35 init with NodeLocalCRISocket and no pause flag: an empty list", () => {
    expect(initKubeletFlagsEnv(initConfig(), release135(), "cp-1")).toBe(
      'KUBELET_KUBEADM_ARGS=""\n',
    );
  });

  it("the user can turn NodeLocalCRISocket off, bringing the flag back", () => {
    const cfg = initConfig((c) => (c.cluster.featureGates = { NodeLocalCRISocket: false }));
    expect(initKubeletFlagsEnv(cfg, release135(), "cp-1")).toBe(
      `KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=${SOCKET}"\n`,
    );
  });

  it("hostname-override only when the node name differs from the (lower-cased) hostname", () => {
    expect(kubeletFlagArgs(input({ hostname: "cp-1" }))).not.toContainEqual(
      expect.stringMatching(/^--hostname-override/),
    );
    expect(kubeletFlagArgs(input({ hostname: kubeletHostname(" CP-1\n") }))).toEqual([
      `--container-runtime-endpoint=${SOCKET}`,
    ]);
    expect(kubeletFlagArgs(input({ hostname: "vm-42" }))).toEqual([
      `--container-runtime-endpoint=${SOCKET}`,
      "--hostname-override=cp-1",
    ]);
    // An empty node name means the hostname.
    expect(kubeletFlagArgs(input({ hostname: "vm-42" }, { name: "" }))).toEqual([
      `--container-runtime-endpoint=${SOCKET}`,
    ]);
  });

  it("a hostname-override kubeletExtraArg names the node and wins", () => {
    const args = kubeletFlagArgs(
      input(
        { hostname: "vm-42" },
        { kubeletExtraArgs: [{ name: "hostname-override", value: "vm-42" }] },
      ),
    );
    // The node name equals the hostname then, so kubeadm adds nothing; the extra arg stays.
    expect(args).toEqual([`--container-runtime-endpoint=${SOCKET}`, "--hostname-override=vm-42"]);
  });

  it("kubeletExtraArgs override kubeadm's flags and may repeat", () => {
    const args = kubeletFlagArgs(
      input(
        { pauseImage: "registry.k8s.io/pause:3.10" },
        {
          kubeletExtraArgs: [
            { name: "node-labels", value: "b=2" },
            { name: "node-labels", value: "a=1" },
            { name: "pod-infra-container-image", value: "mirror/pause:3.10" },
          ],
        },
      ),
    );
    expect(args).toEqual([
      `--container-runtime-endpoint=${SOCKET}`,
      "--node-labels=a=1",
      "--node-labels=b=2",
      "--pod-infra-container-image=mirror/pause:3.10",
    ]);
  });

  it("quotes values with quotes, spaces and backslashes as Go's %q", () => {
    const text = renderKubeletFlagsEnv(
      input({}, { kubeletExtraArgs: [{ name: "node-labels", value: 'say="hi there" c:\\x' }] }),
    );
    expect(text).toBe(
      `KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=${SOCKET} --node-labels=say=\\"hi there\\" c:\\\\x"\n`,
    );
  });

  it("registers taints with the flag only when asked (worker join)", () => {
    const taints = [
      { key: "dedicated", value: "gpu", effect: "NoSchedule" as const },
      { key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" as const },
    ];
    expect(kubeletFlagArgs(input({}, { taints }))).toEqual([
      `--container-runtime-endpoint=${SOCKET}`,
    ]);
    expect(kubeletFlagArgs(input({ registerTaintsUsingFlags: true }, { taints }))).toContain(
      "--register-with-taints=dedicated=gpu:NoSchedule,node-role.kubernetes.io/control-plane:NoSchedule",
    );
    expect(kubeletFlagArgs(input({ registerTaintsUsingFlags: true }, { taints: [] }))).toEqual([
      `--container-runtime-endpoint=${SOCKET}`,
    ]);
  });

  it("refuses an empty hostname", () => {
    expect(() => kubeletHostname("  \n")).toThrow(/hostname is empty/);
  });
});

describe("taintToString (v1.Taint.ToString)", () => {
  it("renders every form", () => {
    expect(taintToString({ key: "k", value: "v", effect: "NoExecute" })).toBe("k=v:NoExecute");
    expect(taintToString({ key: "k", effect: "NoSchedule" })).toBe("k:NoSchedule");
    expect(taintToString({ key: "k", value: "v", effect: "" as never })).toBe("k=v:");
    expect(taintToString({ key: "k", effect: "" as never })).toBe("k");
  });
});

describe("feature gates and instance config", () => {
  it("user gates override release defaults; graduated gates are always on", () => {
    expect(featureGateEnabled({}, release135(), "NodeLocalCRISocket")).toBe(true);
    expect(
      featureGateEnabled({ NodeLocalCRISocket: false }, release135(), "NodeLocalCRISocket"),
    ).toBe(false);
    expect(featureGateEnabled({}, release133(), "NodeLocalCRISocket")).toBe(false);
    expect(
      featureGateEnabled({ NodeLocalCRISocket: true }, release133(), "NodeLocalCRISocket"),
    ).toBe(true);
    const graduated: Release = {
      ...release135(),
      featureGates: {},
      graduatedFeatureGates: ["NodeLocalCRISocket"],
    };
    expect(featureGateEnabled({}, graduated, "NodeLocalCRISocket")).toBe(true);
  });

  it("instance-config.yaml holds only the CRI endpoint, quoted, without apiVersion or kind", () => {
    expect(renderInstanceConfig(SOCKET)).toBe(`containerRuntimeEndpoint: "${SOCKET}"\n`);
  });
});

describe("resolvConf (kubeadm's kubelet Mutate)", () => {
  const base = initConfig().kubelet;
  it("points the kubelet at systemd-resolved's upstream file when the service is active", () => {
    expect(withResolvConf(base, true).resolvConf).toBe("/run/systemd/resolve/resolv.conf");
    expect(withResolvConf(base, false).resolvConf).toBeUndefined();
  });
  it("keeps a user's value and warns", () => {
    const warnings: string[] = [];
    const cfg = withResolvConf({ ...base, resolvConf: "/etc/resolv.conf" }, true, (m) =>
      warnings.push(m),
    );
    expect(cfg.resolvConf).toBe("/etc/resolv.conf");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('"resolvConf"');
  });
});
