import { describe, expect, it } from "vitest";
import { defaultJoinConfig } from "../../../src/config/join-defaults.js";
import {
  JOIN_FLAG_NAMES,
  type JoinFlags,
  applyJoinFlags,
  givenJoinFlags,
} from "../../../src/config/join-flags.js";
import { validateJoinConfig } from "../../../src/config/join-validate.js";
import { decodeConfigDocuments } from "../../../src/config/load.js";
import type { ConfigDocuments, JoinConfig } from "../../../src/config/types.js";

const empty: ConfigDocuments = { ignoredKinds: [] };
const TOKEN = "abcdef.0123456789abcdef";

// kubeadm's cmd/join_test.go testJoinConfig, in v1beta4 (the v1beta3 original is read below).
const joinConfigFile = (apiVersion: string) => `apiVersion: ${apiVersion}
kind: JoinConfiguration
discovery:
  bootstrapToken:
    token: abcdef.0123456789abcdef
    apiServerEndpoint: 1.2.3.4:6443
    unsafeSkipCAVerification: true
nodeRegistration:
  criSocket: /run/containerd/containerd.sock
  name: someName
  ignorePreflightErrors:
    - c
    - d
`;
const fromFile = decodeConfigDocuments(joinConfigFile("kubeadm.k8s.io/v1beta4"), "join.yaml");

/** kubeadm's newJoinData: flags (+ file) → defaults → validation. Throws like kubeadm. */
function joinData(
  flags: JoinFlags,
  docs: ConfigDocuments = empty,
): { cfg: JoinConfig; warnings: string[] } {
  const warnings: string[] = [];
  const warn = (m: string) => warnings.push(m);
  const applied = applyJoinFlags(docs, flags, { configFileGiven: docs !== empty, warn });
  const cfg = defaultJoinConfig(applied, {
    nodeName: "host-1",
    advertiseAddress: "192.0.2.7",
    warn,
  });
  const problems = validateJoinConfig(cfg);
  if (problems.length > 0) throw new Error(problems.join("\n"));
  return { cfg, warnings };
}

describe("kubeadm's TestNewJoinData (cmd/join_test.go), through flags, defaults and validation", () => {
  it("fails if no discovery method set", () => {
    expect(() => joinData({})).toThrow(/JoinConfiguration\.discovery: set bootstrapToken or file/);
  });

  it("fails if both file and bootstrap discovery methods set", () => {
    expect(() =>
      joinData({
        apiServerEndpoint: "1.2.3.4:6443",
        discoveryFile: "https://foo",
        discoveryToken: TOKEN,
        discoveryTokenUnsafeSkipCaVerification: true,
      }),
    ).toThrow("JoinConfiguration.discovery: bootstrapToken and file cannot both be set");
  });

  it("passes if file discovery is set", () => {
    const { cfg } = joinData({ discoveryFile: "https://foo" });
    expect(cfg.join.discovery.file).toEqual({ kubeConfigPath: "https://foo" });
    expect(cfg.join.discovery.bootstrapToken).toBeUndefined();
  });

  it("passes if bootstrap discovery is set", () => {
    const { cfg } = joinData({
      apiServerEndpoint: "1.2.3.4:6443",
      discoveryToken: TOKEN,
      discoveryTokenUnsafeSkipCaVerification: true,
    });
    expect(cfg.join.discovery.bootstrapToken).toEqual({
      token: TOKEN,
      apiServerEndpoint: "1.2.3.4:6443",
      caCertHashes: [],
      unsafeSkipCAVerification: true,
    });
  });

  it("--token sets TLSBootstrapToken and BootstrapToken.Token if unset", () => {
    const { cfg } = joinData({
      apiServerEndpoint: "1.2.3.4:6443",
      token: TOKEN,
      discoveryTokenUnsafeSkipCaVerification: true,
    });
    expect(cfg.join.discovery.tlsBootstrapToken).toBe(TOKEN);
    expect(cfg.join.discovery.bootstrapToken?.token).toBe(TOKEN);
  });

  it("--token doesn't override TLSBootstrapToken and BootstrapToken.Token if set", () => {
    const { cfg } = joinData({
      apiServerEndpoint: "1.2.3.4:6443",
      token: "aaaaaa.0123456789aaaaaa",
      tlsBootstrapToken: TOKEN,
      discoveryToken: "defghi.0123456789defghi",
      discoveryTokenUnsafeSkipCaVerification: true,
    });
    expect(cfg.join.discovery.tlsBootstrapToken).toBe(TOKEN);
    expect(cfg.join.discovery.bootstrapToken?.token).toBe("defghi.0123456789defghi");
  });

  it("keeps control-plane settings if --control-plane is set", () => {
    const { cfg } = joinData({
      controlPlane: true,
      apiserverAdvertiseAddress: "1.2.3.4",
      apiserverBindPort: 1234,
      discoveryFile: "https://foo",
    });
    expect(cfg.join.controlPlane?.localAPIEndpoint).toEqual({
      advertiseAddress: "1.2.3.4",
      bindPort: 1234,
    });
  });

  it("cleans up control-plane settings if --control-plane is not set, with kubeadm's warning", () => {
    const { cfg, warnings } = joinData({
      controlPlane: false,
      apiserverAdvertiseAddress: "1.2.3.4",
      certificateKey: "a".repeat(64),
      discoveryFile: "https://foo",
    });
    expect(cfg.join.controlPlane).toBeUndefined();
    expect(warnings).toEqual([
      "[preflight] WARNING: --control-plane is also required when passing control-plane related flags such as [certificate-key, apiserver-advertise-address, apiserver-bind-port]",
    ]);
  });

  it("fails if invalid preflight checks are provided", () => {
    expect(() => joinData({ ignorePreflightErrors: ["all", "something-else"] })).toThrow(
      /--ignore-preflight-errors: do not name individual checks when "all" is used/,
    );
  });

  it.each(["kubeadm.k8s.io/v1beta4", "kubeadm.k8s.io/v1beta3"])(
    "passes with the config from a file (%s)",
    (apiVersion) => {
      const docs = decodeConfigDocuments(joinConfigFile(apiVersion), "join.yaml");
      const { cfg, warnings } = joinData({}, docs);
      expect(cfg.join.nodeRegistration.name).toBe("somename"); // GetHostname lower-cases
      expect(cfg.join.nodeRegistration.criSocket).toBe("unix:///run/containerd/containerd.sock");
      expect(warnings).toContainEqual(
        expect.stringContaining("Usage of CRI endpoints without URL scheme is deprecated"),
      );
      expect(cfg.join.discovery.tlsBootstrapToken).toBe(TOKEN);
    },
  );

  it("--node-name overrides the config from a file", () => {
    expect(joinData({ nodeName: "anotherName" }, fromFile).cfg.join.nodeRegistration.name).toBe(
      "anothername",
    );
  });

  it("fails if mixed arguments are passed", () => {
    expect(() => joinData({ apiserverAdvertiseAddress: "1.2.3.4" }, fromFile)).toThrow(
      "can not mix '--config' with arguments [apiserver-advertise-address]",
    );
  });

  it.each<[string, JoinFlags, ConfigDocuments, string[]]>([
    [
      "from CLI args only",
      { ignorePreflightErrors: ["a", "b"], discoveryFile: "https://foo" },
      empty,
      ["a", "b"],
    ],
    ["from JoinConfiguration only", {}, fromFile, ["c", "d"]],
    [
      "from both CLI args and JoinConfiguration",
      { ignorePreflightErrors: ["a", "b"] },
      fromFile,
      ["a", "b", "c", "d"],
    ],
  ])("pre-flight errors %s", (_name, flags, docs, expected) => {
    expect(joinData(flags, docs).cfg.join.nodeRegistration.ignorePreflightErrors).toEqual(expected);
  });
});

describe("applyJoinFlags without --config: the flags build the JoinConfiguration", () => {
  it("maps every configuration flag", () => {
    const hashes = [`sha256:${"a".repeat(64)}`, `sha256:${"b".repeat(64)}`];
    const docs = applyJoinFlags(
      empty,
      {
        apiServerEndpoint: "10.0.0.1:6443",
        token: TOKEN,
        discoveryTokenCaCertHash: hashes,
        controlPlane: true,
        certificateKey: "c".repeat(64),
        apiserverAdvertiseAddress: "10.0.0.2",
        apiserverBindPort: 7443,
        nodeName: "CP-2",
        criSocket: "unix:///run/crio/crio.sock",
        ignorePreflightErrors: ["Swap"],
        skipPhases: ["preflight"],
        patches: "/etc/kubeforge/patches",
        dryRun: true,
        dryRunDir: "/tmp/out",
        rootfs: "/mnt/host",
      },
      { configFileGiven: false },
    );
    expect(docs.join).toEqual({
      discovery: {
        bootstrapToken: {
          token: TOKEN,
          apiServerEndpoint: "10.0.0.1:6443",
          caCertHashes: hashes,
          unsafeSkipCAVerification: false,
        },
        tlsBootstrapToken: TOKEN,
      },
      nodeRegistration: {
        name: "CP-2",
        criSocket: "unix:///run/crio/crio.sock",
        ignorePreflightErrors: ["swap"],
      },
      patches: { directory: "/etc/kubeforge/patches" },
      controlPlane: {
        localAPIEndpoint: { advertiseAddress: "10.0.0.2", bindPort: 7443 },
        certificateKey: "c".repeat(64),
      },
      skipPhases: ["preflight"],
      dryRun: true,
    });
  });

  it("drops token discovery flags without the endpoint argument, as kubeadm", () => {
    const docs = applyJoinFlags(
      empty,
      { token: TOKEN, discoveryTokenCaCertHash: [`sha256:${"a".repeat(64)}`] },
      { configFileGiven: false },
    );
    expect(docs.join?.discovery).toEqual({ tlsBootstrapToken: TOKEN });
  });

  it("keeps the file's credentials for TLS bootstrap unless a token is given", () => {
    expect(
      applyJoinFlags(empty, { discoveryFile: "/etc/d.conf" }, { configFileGiven: false }).join
        ?.discovery,
    ).toEqual({ file: { kubeConfigPath: "/etc/d.conf" } });
    expect(
      applyJoinFlags(
        empty,
        { discoveryFile: "/etc/d.conf", token: TOKEN },
        { configFileGiven: false },
      ).join?.discovery,
    ).toEqual({ file: { kubeConfigPath: "/etc/d.conf" }, tlsBootstrapToken: TOKEN });
  });

  it.each<[string, JoinFlags, boolean]>([
    ["the default bind port alone", { apiserverBindPort: 6443 }, false],
    ["an empty certificate key", { certificateKey: "" }, false],
    ["another bind port", { apiserverBindPort: 8443 }, true],
    ["a certificate key", { certificateKey: "a".repeat(64) }, true],
  ])("warns about control-plane flags without --control-plane: %s → %s", (_n, flags, warned) => {
    const warnings: string[] = [];
    const docs = applyJoinFlags(
      empty,
      { discoveryFile: "https://foo", ...flags },
      { configFileGiven: false, warn: (m) => warnings.push(m) },
    );
    expect(docs.join?.controlPlane).toBeUndefined();
    expect(warnings.length > 0).toBe(warned);
  });

  it("refuses a bind port outside the int range of a port", () => {
    expect(() =>
      applyJoinFlags(
        empty,
        { controlPlane: true, apiserverBindPort: 70000 },
        { configFileGiven: false },
      ),
    ).toThrow("--apiserver-bind-port: 70000 is not a port number between 1 and 65535");
  });

  it("an empty --skip-phases leaves the configuration's list; a non-empty one replaces it", () => {
    const withList: ConfigDocuments = {
      ...fromFile,
      join: { ...fromFile.join, skipPhases: ["a"] },
    };
    const opts = { configFileGiven: true };
    expect(applyJoinFlags(withList, { skipPhases: [] }, opts).join?.skipPhases).toEqual(["a"]);
    expect(applyJoinFlags(withList, { skipPhases: ["b"] }, opts).join?.skipPhases).toEqual(["b"]);
  });
});

describe("applyJoinFlags with --config (ValidateMixedArguments)", () => {
  const opts = { configFileGiven: true };

  it.each<[string, JoinFlags]>([
    ["token", { token: TOKEN }],
    ["discovery-token-ca-cert-hash", { discoveryTokenCaCertHash: [] }],
    [
      "discovery-token-unsafe-skip-ca-verification",
      { discoveryTokenUnsafeSkipCaVerification: false },
    ],
    ["discovery-file", { discoveryFile: "/x.conf" }],
    ["control-plane", { controlPlane: true }],
    ["cri-socket", { criSocket: "unix:///x.sock" }],
    ["patches", { patches: "/p" }],
  ])("refuses --%s beside --config", (name, flags) => {
    expect(() => applyJoinFlags(fromFile, flags, opts)).toThrow(
      `can not mix '--config' with arguments [${name}]`,
    );
  });

  it("names every offending flag, sorted", () => {
    expect(() =>
      applyJoinFlags(fromFile, { token: TOKEN, controlPlane: true, nodeName: "x" }, opts),
    ).toThrow("can not mix '--config' with arguments [control-plane token]");
  });

  it("accepts the run-time and skip flags beside --config", () => {
    const docs = applyJoinFlags(
      fromFile,
      {
        dryRun: false,
        dryRunDir: "/tmp/d",
        rootfs: "/r",
        skipPhases: ["preflight"],
        nodeName: "n",
      },
      opts,
    );
    expect(docs.join?.dryRun).toBe(false);
    expect(docs.join?.skipPhases).toEqual(["preflight"]);
    expect(docs.join?.nodeRegistration?.name).toBe("n");
  });

  it("a --dry-run that is set wins over the file both ways (ValueFromFlagsOrConfig)", () => {
    const dry: ConfigDocuments = { ...fromFile, join: { ...fromFile.join, dryRun: true } };
    expect(applyJoinFlags(dry, { dryRun: false }, opts).join?.dryRun).toBe(false);
    expect(applyJoinFlags(dry, {}, opts).join?.dryRun).toBe(true);
    expect(applyJoinFlags(fromFile, { dryRun: true }, opts).join?.dryRun).toBe(true);
  });

  it("refuses a file without a JoinConfiguration", () => {
    const initOnly = decodeConfigDocuments(
      "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n",
      "init.yaml",
    );
    expect(() => applyJoinFlags(initOnly, {}, opts)).toThrow(
      "--config: the file holds no JoinConfiguration",
    );
  });

  it("warns that the endpoint argument is ignored, keeping the file's endpoint", () => {
    const warnings: string[] = [];
    const docs = applyJoinFlags(
      fromFile,
      { apiServerEndpoint: "9.9.9.9:6443" },
      { ...opts, warn: (m) => warnings.push(m) },
    );
    expect(docs.join?.discovery?.bootstrapToken?.apiServerEndpoint).toBe("1.2.3.4:6443");
    expect(warnings).toEqual([expect.stringContaining('"9.9.9.9:6443" is ignored with --config')]);
  });

  it("does not modify its input", () => {
    const before = structuredClone(fromFile);
    applyJoinFlags(fromFile, { nodeName: "x", ignorePreflightErrors: ["Swap"] }, opts);
    expect(fromFile).toEqual(before);
  });
});

describe("givenJoinFlags / JOIN_FLAG_NAMES", () => {
  it("lists kubeadm's flag names of the given flags only", () => {
    expect(
      givenJoinFlags({ apiServerEndpoint: "1.2.3.4:6443", token: TOKEN, controlPlane: false }),
    ).toEqual(["token", "control-plane"]);
  });

  it("covers every flag the issue lists", () => {
    expect(Object.values(JOIN_FLAG_NAMES).sort()).toEqual(
      [
        "token",
        "discovery-token",
        "tls-bootstrap-token",
        "discovery-token-ca-cert-hash",
        "discovery-token-unsafe-skip-ca-verification",
        "discovery-file",
        "control-plane",
        "certificate-key",
        "apiserver-advertise-address",
        "apiserver-bind-port",
        "node-name",
        "cri-socket",
        "ignore-preflight-errors",
        "skip-phases",
        "patches",
        "dry-run",
        "dry-run-dir",
        "rootfs",
      ].sort(),
    );
  });
});
