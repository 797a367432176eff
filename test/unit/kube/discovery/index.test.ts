import { describe, expect, it } from "vitest";
import {
  discover,
  discoverTLSBootstrapConfig,
  type DiscoverOptions,
} from "../../../../src/kube/discovery/index.js";
import { computeDetachedSignature } from "../../../support/sim/apiserver/controllers/jws.js";
import { fakeClients, TEST_CERT_PEM, TEST_CERT_PIN } from "./fake-client.js";

// The dispatch of kubeadm's DiscoverValidatedKubeConfig and the wrapping of discovery.For.

const KUBECONFIG = `apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: ${Buffer.from(TEST_CERT_PEM).toString("base64")}
    server: https://cp.example:6443
  name: ""
contexts: null
current-context: ""
kind: Config
users: null
`;
const SIGNED = {
  kubeconfig: KUBECONFIG,
  "jws-kubeconfig-abcdef": computeDetachedSignature(KUBECONFIG, "abcdef", "0123456789abcdef"),
};

function opts(files: Record<string, string> = {}) {
  const fake = fakeClients(() => SIGNED);
  const o: DiscoverOptions = {
    timeoutMs: 2_000,
    intervalMs: 10,
    log: () => undefined,
    readFile: (p) =>
      files[p] === undefined
        ? Promise.reject(new Error(`open ${p}: no such file`))
        : Promise.resolve(Buffer.from(files[p])),
    clientFor: fake.clientFor,
  };
  return { fake, o };
}

const bootstrapToken = {
  apiServerEndpoint: "10.0.0.4:6443",
  token: "abcdef.0123456789abcdef",
  caCertHashes: [TEST_CERT_PIN],
};

describe("discover", () => {
  it("uses the token when only bootstrapToken is set", async () => {
    const { o } = opts();
    const result = await discover({ bootstrapToken }, o);
    expect(result.method).toBe("token");
    expect(result.server).toBe("https://cp.example:6443");
    expect(result.caPEM.toString()).toBe(TEST_CERT_PEM);
    expect(result.cluster.name).toBe("");
  });

  it("prefers the file when both are set, as kubeadm's switch", async () => {
    const { o, fake } = opts({ "/d.conf": KUBECONFIG });
    const result = await discover({ bootstrapToken, file: { kubeConfigPath: "/d.conf" } }, o);
    expect(result.method).toBe("file");
    expect(fake.kubeconfigs).toHaveLength(1);
  });

  it("refuses a discovery section naming no mechanism", async () => {
    const { o } = opts();
    await expect(discover({}, o)).rejects.toThrow(/couldn't find a valid discovery configuration/);
  });
});

describe("discoverTLSBootstrapConfig (discovery.For)", () => {
  it("builds bootstrap-kubelet.conf with the discovery token when no TLS bootstrap token is set", async () => {
    const { o } = opts();
    const { tlsBootstrap } = await discoverTLSBootstrapConfig({ bootstrapToken }, o);
    expect(tlsBootstrap.users).toEqual([
      { name: "tls-bootstrap-token-user", user: { token: "abcdef.0123456789abcdef" } },
    ]);
    expect(tlsBootstrap.clusters[0]!.cluster.server).toBe("https://cp.example:6443");
  });

  it("prefers tlsBootstrapToken", async () => {
    const { o } = opts();
    const { tlsBootstrap } = await discoverTLSBootstrapConfig(
      { bootstrapToken, tlsBootstrapToken: "zyxwvu.0123456789zyxwvu" },
      o,
    );
    expect(tlsBootstrap.users[0]!.user.token).toBe("zyxwvu.0123456789zyxwvu");
  });

  it("wraps discovery failures as kubeadm does", async () => {
    const { o } = opts();
    await expect(
      discoverTLSBootstrapConfig(
        { bootstrapToken: { ...bootstrapToken, caCertHashes: ["sha256:" + "ab".repeat(32)] } },
        o,
      ),
    ).rejects.toThrow(
      /^couldn't validate the identity of the API Server: the cluster CA found in the cluster-info ConfigMap is not pinned/,
    );
  });

  it("refuses a discovery file without credentials when no TLS bootstrap token is given", async () => {
    const { o } = opts({ "/d.conf": KUBECONFIG });
    await expect(
      discoverTLSBootstrapConfig({ file: { kubeConfigPath: "/d.conf" } }, o),
    ).rejects.toThrow(/could not find authentication credentials for the TLS bootstrap process/);
  });
});
