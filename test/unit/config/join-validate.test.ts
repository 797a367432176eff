import { describe, expect, it } from "vitest";
import { defaultJoinConfig } from "../../../src/config/join-defaults.js";
import { validateJoinConfig } from "../../../src/config/join-validate.js";
import type { JoinConfig, JoinConfiguration } from "../../../src/config/types.js";

const TOKEN = "abcdef.1234567890123456";
// The pin in kubeadm's validation_test.go.
const HASH = "sha256:7173b809ca12ec5dee4506cd86be934c4596dd234ee82c0662eac04a8c2c71dc";

function defaulted(join: JoinConfiguration, advertiseAddress = "192.0.2.30"): JoinConfig {
  return defaultJoinConfig({ ignoredKinds: [], join }, { nodeName: "node-1", advertiseAddress });
}
const problems = (join: JoinConfiguration, exists?: boolean) =>
  validateJoinConfig(defaulted(join), exists === undefined ? {} : { discoveryFileExists: exists });
const withToken = (
  bt: NonNullable<NonNullable<JoinConfiguration["discovery"]>["bootstrapToken"]>,
) => ({ discovery: { bootstrapToken: bt } }) satisfies JoinConfiguration;

describe("kubeadm's TestValidateDiscovery", () => {
  it.each<[string, JoinConfiguration, string]>([
    [
      "invalid: .BootstrapToken and .File cannot both be set",
      {
        discovery: {
          bootstrapToken: {
            token: TOKEN,
            apiServerEndpoint: "192.168.122.100:6443",
            caCertHashes: [HASH],
          },
          file: { kubeConfigPath: "https://url/file.conf" },
        },
      },
      "JoinConfiguration.discovery: bootstrapToken and file cannot both be set",
    ],
    [
      "invalid: .BootstrapToken or .File must be set",
      {},
      "JoinConfiguration.discovery: set bootstrapToken or file (on the command line: the API server endpoint host:port with --token, or --discovery-file)",
    ],
  ])("%s", (_n, join, message) => {
    expect(problems(join)).toEqual([message]);
  });
});

describe("kubeadm's TestValidateDiscoveryBootstrapToken", () => {
  it.each<[string, JoinConfiguration, boolean]>([
    [
      "invalid: .APIServerEndpoint not set",
      withToken({ token: TOKEN, caCertHashes: [HASH] }),
      false,
    ],
    [
      "invalid: token-based discovery without CACertHashes and UnsafeSkipCAVerification",
      withToken({
        token: TOKEN,
        apiServerEndpoint: "192.168.122.100:6443",
        unsafeSkipCAVerification: false,
      }),
      false,
    ],
    [
      "valid: token-based discovery with CACertHashes",
      withToken({ token: TOKEN, apiServerEndpoint: "192.168.122.100:6443", caCertHashes: [HASH] }),
      true,
    ],
    [
      "valid: token-based discovery with CACertHashes but skip CA verification",
      withToken({
        token: TOKEN,
        apiServerEndpoint: "192.168.122.100:6443",
        caCertHashes: [HASH],
        unsafeSkipCAVerification: true,
      }),
      true,
    ],
    [
      "valid: no CACertHashes, with UnsafeSkipCAVerification set explicitly",
      withToken({
        token: TOKEN,
        apiServerEndpoint: "192.168.122.100:6443",
        unsafeSkipCAVerification: true,
      }),
      true,
    ],
  ])("%s", (_n, join, valid) => {
    expect(problems(join).length === 0).toBe(valid);
  });

  it("refuses token discovery without a pin with kubeadm's instruction", () => {
    expect(problems(withToken({ token: TOKEN, apiServerEndpoint: "10.0.0.1:6443" }))).toEqual([
      expect.stringMatching(
        /^JoinConfiguration\.discovery\.bootstrapToken\.caCertHashes: token discovery without caCertHashes is unsafe; pin the cluster CA with --discovery-token-ca-cert-hash .*Set unsafeSkipCAVerification as true in your kubeadm config file or pass --discovery-token-unsafe-skip-ca-verification flag to continue$/i,
      ),
    ]);
  });
});

describe("kubeadm's TestValidateDiscoveryTokenAPIServer", () => {
  it.each([
    ["192.168.122.100", false],
    ["192.168.122.100:6443", true],
    ["[fd00::10]:6443", true],
    ["cp.example.com:6443", true],
  ])("%s valid=%s", (endpoint, valid) => {
    const join = withToken({ token: TOKEN, apiServerEndpoint: endpoint, caCertHashes: [HASH] });
    expect(problems(join).length === 0).toBe(valid);
  });
});

describe("kubeadm's TestValidateDiscoveryKubeConfigPath", () => {
  // kubeadm stats paths itself; here the caller says whether the file exists.
  it.each<[string, boolean | undefined, boolean]>([
    ["foo", false, false],
    ["/foo/bar/file_which_i_believe_not_existing.conf", false, false],
    ["/tmp/test_discovery_file", true, true],
    ["http://[::1]a", undefined, false],
    ["http://url/file.conf", undefined, false],
    ["https://u r l/file.conf", undefined, false],
    ["https://url/file.conf", undefined, true],
    // Defaulting made the file:// URL a path; the existence check applies to that path.
    ["file:///etc/kubernetes/discovery.conf", true, true],
    ["ftp://url/file.conf", undefined, false],
  ])("%s (exists: %s) valid=%s", (kubeConfigPath, exists, valid) => {
    expect(problems({ discovery: { file: { kubeConfigPath } } }, exists).length === 0).toBe(valid);
  });

  it("names the file and the rule", () => {
    expect(problems({ discovery: { file: { kubeConfigPath: "/nope.conf" } } }, false)).toEqual([
      'JoinConfiguration.discovery.file.kubeConfigPath: "/nope.conf" is not a valid HTTPS URL or a file on disk',
    ]);
    expect(problems({ discovery: { file: { kubeConfigPath: "http://url/file.conf" } } })).toEqual([
      'JoinConfiguration.discovery.file.kubeConfigPath: "http://url/file.conf": only https URLs and file paths are accepted',
    ]);
  });
});

describe("rules that hold only after defaulting (ValidateJoinConfiguration on the defaulted form)", () => {
  const good = withToken({
    token: TOKEN,
    apiServerEndpoint: "10.0.0.1:6443",
    caCertHashes: [HASH],
  });

  it("accepts a defaulted worker and control-plane join", () => {
    expect(problems(good)).toEqual([]);
    expect(problems({ ...good, controlPlane: { certificateKey: "0f".repeat(32) } })).toEqual([]);
  });

  it.each<[string, JoinConfiguration, string]>([
    [
      "an invalid explicit TLS bootstrap token (ValidateToken)",
      { discovery: { ...good.discovery, tlsBootstrapToken: "nope" } },
      'JoinConfiguration.discovery.tlsBootstrapToken: the bootstrap token is not of the form "[a-z0-9]{6}.[a-z0-9]{16}"',
    ],
    [
      "a loopback control-plane address (VerifyAPIServerBindAddress)",
      { ...good, controlPlane: { localAPIEndpoint: { advertiseAddress: "127.0.0.1" } } },
      `JoinConfiguration.controlPlane.localAPIEndpoint.advertiseAddress: "127.0.0.1" cannot be the API server's advertise address; use a global unicast address of this node`,
    ],
    [
      "an address that is no IP (SetAPIEndpointDynamicDefaults)",
      { ...good, controlPlane: { localAPIEndpoint: { advertiseAddress: "cp.local" } } },
      'JoinConfiguration.controlPlane.localAPIEndpoint.advertiseAddress: "cp.local" is not a valid IP address',
    ],
    [
      "a bind port out of range",
      { ...good, controlPlane: { localAPIEndpoint: { bindPort: 70000 } } },
      "JoinConfiguration.controlPlane.localAPIEndpoint.bindPort: 70000 is not a port number between 1 and 65535",
    ],
    [
      "a short certificate key (ValidateCertificateKey)",
      { ...good, controlPlane: { certificateKey: "abcd" } },
      "JoinConfiguration.controlPlane.certificateKey: the certificate key must be 64 hexadecimal characters (a 32-byte AES key)",
    ],
    [
      "a node name that is no DNS subdomain",
      { ...good, nodeRegistration: { name: "node_1" } },
      'JoinConfiguration.nodeRegistration.name: "node_1" is not a valid node name (a lower-case RFC-1123 DNS subdomain)',
    ],
    [
      "a CRI socket with another scheme (ValidateSocketPath)",
      { ...good, nodeRegistration: { criSocket: "bla:///some/path" } },
      'JoinConfiguration.nodeRegistration.criSocket: "bla:///some/path" must be a unix:// URL (for example unix:///var/run/containerd/containerd.sock)',
    ],
    [
      "a relative CA path",
      { ...good, caCertPath: "pki/ca.crt" },
      'JoinConfiguration.caCertPath: "pki/ca.crt" must be an absolute path to a .crt file',
    ],
    [
      "a CA path that is not a .crt",
      { ...good, caCertPath: "/etc/kubernetes/pki/ca.pem" },
      'JoinConfiguration.caCertPath: "/etc/kubernetes/pki/ca.pem" must be an absolute path to a .crt file',
    ],
    [
      "ignoring all checks and some",
      { ...good, nodeRegistration: { ignorePreflightErrors: ["all", "Swap"] } },
      'JoinConfiguration.nodeRegistration.ignorePreflightErrors: do not name individual checks when "all" is used',
    ],
    [
      "a relative patches folder",
      { ...good, patches: { directory: "patches" } },
      'JoinConfiguration.patches.directory: "patches" is not an absolute path',
    ],
  ])("refuses %s", (_n, join, message) => {
    expect(problems(join)).toEqual([message]);
  });

  it("accepts a bare CRI socket path: defaulting made it a unix:// URL", () => {
    expect(problems({ ...good, nodeRegistration: { criSocket: "/some/path" } })).toEqual([]);
  });

  it("never echoes token secrets or certificate keys", () => {
    const secret = "ABCDEF.SECRETSECRETSECRE";
    const key = "Z".repeat(64);
    const found = problems({
      discovery: {
        bootstrapToken: { token: secret, apiServerEndpoint: "10.0.0.1:6443", caCertHashes: [HASH] },
      },
      controlPlane: { certificateKey: key },
    });
    expect(found.length).toBeGreaterThan(0);
    expect(found.join("\n")).not.toContain("SECRET");
    expect(found.join("\n")).not.toContain(key);
  });
});
