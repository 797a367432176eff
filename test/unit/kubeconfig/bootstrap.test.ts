import { describe, expect, it } from "vitest";
import {
  clusterOf,
  hasAuthenticationCredentials,
  tlsBootstrapKubeConfig,
  withServer,
} from "../../../src/kubeconfig/bootstrap.js";
import { renderKubeConfig } from "../../../src/kubeconfig/build.js";
import { parseKubeConfig } from "../../../src/kubeconfig/parse.js";

// bootstrap-kubelet.conf as kubeadm's discovery.For makes it, and the kubeconfig helpers it
// rests on (kubeadm: util/kubeconfig/kubeconfig.go).

const parse = (text: string) => parseKubeConfig(text, "test");
const CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
const CA_B64 = Buffer.from(CA).toString("base64");

const CLUSTER_INFO = parse(`apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: ${CA_B64}
    server: https://cp.example:6443
  name: ""
contexts: null
current-context: ""
kind: Config
users: null
`);

describe("tlsBootstrapKubeConfig (discovery.For)", () => {
  it('is CreateWithToken(server, "kubernetes", "tls-bootstrap-token-user", CA, token), written as clientcmd does', () => {
    const config = tlsBootstrapKubeConfig(CLUSTER_INFO, "abcdef.0123456789abcdef");
    expect(renderKubeConfig(config, { preferences: false })).toBe(`apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: ${CA_B64}
    server: https://cp.example:6443
  name: kubernetes
contexts:
- context:
    cluster: kubernetes
    user: tls-bootstrap-token-user
  name: tls-bootstrap-token-user@kubernetes
current-context: tls-bootstrap-token-user@kubernetes
kind: Config
users:
- name: tls-bootstrap-token-user
  user:
    token: abcdef.0123456789abcdef
`);
  });

  it("omits an empty CA (a discovery file trusting the host's store)", () => {
    const noCA = parse("clusters: [{name: '', cluster: {server: 'https://x:6443'}}]\n");
    expect(tlsBootstrapKubeConfig(noCA, "abcdef.0123456789abcdef").clusters[0]!.cluster).toEqual({
      server: "https://x:6443",
    });
  });

  it("without a token, is the discovery file itself when it carries credentials", () => {
    const file = parse(`clusters: [{name: c, cluster: {server: 'https://x:6443'}}]
contexts: [{name: ctx, context: {cluster: c, user: u}}]
current-context: ctx
users: [{name: u, user: {client-certificate-data: Zm9v, client-key-data: YmFy}}]
`);
    expect(tlsBootstrapKubeConfig(file, undefined)).toBe(file);
  });

  it("without a token nor credentials, fails saying what would do", () => {
    expect(() => tlsBootstrapKubeConfig(CLUSTER_INFO, "")).toThrow(
      /could not find authentication credentials for the TLS bootstrap process/,
    );
  });
});

describe("clusterOf (GetClusterFromKubeConfig)", () => {
  it.each([
    [
      "the unnamed cluster first",
      "clusters: [{name: a, cluster: {server: A}}, {name: '', cluster: {server: U}}]\ncontexts: [{name: x, context: {cluster: a, user: u}}]\ncurrent-context: x\n",
      "U",
    ],
    [
      "else the current context's",
      "clusters: [{name: a, cluster: {server: A}}, {name: b, cluster: {server: B}}]\ncontexts: [{name: x, context: {cluster: b, user: u}}]\ncurrent-context: x\n",
      "B",
    ],
    ["none without a current context", "clusters: [{name: a, cluster: {server: A}}]\n", undefined],
    [
      "none when the context names a missing cluster",
      "clusters: [{name: a, cluster: {server: A}}]\ncontexts: [{name: x, context: {cluster: z, user: u}}]\ncurrent-context: x\n",
      undefined,
    ],
  ])("%s", (_name, text, server) => {
    expect(clusterOf(parse(text))?.cluster.server).toBe(server);
  });
});

describe("hasAuthenticationCredentials", () => {
  const withUser = (user: string) =>
    parse(`clusters: [{name: c, cluster: {server: S}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
users: [{name: u, user: ${user}}]
`);
  it.each([
    ["a token", "{token: t}", true],
    ["a username and password", "{username: a, password: b}", true],
    ["a username alone", "{username: a}", false],
    [
      "a client certificate and key (data)",
      "{client-certificate-data: Zm9v, client-key-data: YmFy}",
      true,
    ],
    ["a client certificate and key (files)", "{client-certificate: /c, client-key: /k}", true],
    ["a certificate without its key", "{client-certificate: /c}", false],
    ["an exec plugin", "{exec: {command: x, apiVersion: client.authentication.k8s.io/v1}}", true],
    ["a token file", "{tokenFile: /t}", true],
    ["an auth provider", "{auth-provider: {name: oidc}}", true],
    ["nothing", "{}", false],
  ])("%s: %s", (_name, user, expected) => {
    expect(hasAuthenticationCredentials(withUser(user))).toBe(expected);
  });

  it("is false without a current context", () => {
    expect(hasAuthenticationCredentials(parse("users: [{name: u, user: {token: t}}]\n"))).toBe(
      false,
    );
  });
});

describe("withServer (ControlPlaneKubeletLocalMode)", () => {
  it("replaces every cluster's server and leaves the input alone", () => {
    const config = tlsBootstrapKubeConfig(CLUSTER_INFO, "abcdef.0123456789abcdef");
    const local = withServer(config, "https://10.0.0.5:6443");
    expect(local.clusters.map((c) => c.cluster.server)).toEqual(["https://10.0.0.5:6443"]);
    expect(config.clusters[0]!.cluster.server).toBe("https://cp.example:6443");
  });
});
