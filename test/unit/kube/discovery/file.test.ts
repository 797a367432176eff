import { describe, expect, it } from "vitest";
import {
  discoverFromFile,
  discoveryFileLocation,
  kubeConfigProblems,
  type FileDiscoveryOptions,
} from "../../../../src/kube/discovery/index.js";
import { clusterCAData, clusterOf } from "../../../../src/kubeconfig/bootstrap.js";
import { parseKubeConfig } from "../../../../src/kubeconfig/parse.js";
import {
  fakeClients,
  forbidden,
  refused,
  TEST_CERT2_PEM,
  TEST_CERT_PEM,
  type Answer,
} from "./fake-client.js";

// File discovery (kubeadm: discovery/file/file.go ValidateConfigInfo) over an in-memory file
// system and scripted cluster-info answers.

const SERVER = "https://cp.example:6443";
const b64 = (s: string) => Buffer.from(s).toString("base64");

function clusterInfoKubeconfig(caPEM: string, server = SERVER): string {
  return `apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: ${b64(caPEM)}
    server: ${server}
  name: ""
contexts: null
current-context: ""
kind: Config
users: null
`;
}

/** A discovery file with a named cluster, a context and a user. */
function discoveryFile(cluster: string, user: string): string {
  return `apiVersion: v1
kind: Config
clusters:
- name: kubernetes
  cluster:
${cluster}
contexts:
- name: joiner@kubernetes
  context:
    cluster: kubernetes
    user: joiner
current-context: joiner@kubernetes
users:
- name: joiner
  user:
${user}
`;
}

function setup(
  files: Record<string, string>,
  script: (c: number, a: number) => Answer,
  over: Partial<FileDiscoveryOptions> = {},
) {
  const fake = fakeClients(script);
  const logs: string[] = [];
  const warnings: string[] = [];
  const reads: string[] = [];
  const opts: FileDiscoveryOptions = {
    readFile: (path) => {
      reads.push(path);
      const content = files[path];
      return content === undefined
        ? Promise.reject(new Error(`open ${path}: no such file or directory`))
        : Promise.resolve(Buffer.from(content));
    },
    log: (l) => logs.push(l),
    warn: (l) => warnings.push(l),
    timeoutMs: 5_000,
    intervalMs: 10,
    clientFor: fake.clientFor,
    ...over,
  };
  return { fake, logs, warnings, reads, opts };
}

async function failure(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error("expected a failure");
}

describe("discoveryFileLocation", () => {
  it.each([
    ["/etc/kubernetes/discovery.conf", { kind: "file", path: "/etc/kubernetes/discovery.conf" }],
    ["discovery.conf", { kind: "file", path: "discovery.conf" }],
    [
      "file:///etc/kubernetes/discovery.conf",
      { kind: "file", path: "/etc/kubernetes/discovery.conf" },
    ],
    ["file:///tmp/a%20b.conf", { kind: "file", path: "/tmp/a b.conf" }],
    [
      "https://example.com/cluster.conf",
      { kind: "https", url: "https://example.com/cluster.conf" },
    ],
    ["HTTPS://example.com/c", { kind: "https", url: "HTTPS://example.com/c" }],
  ])("%s", (input, expected) => {
    expect(discoveryFileLocation(input)).toEqual(expected);
  });

  it.each(["http://example.com/cluster.conf", "ftp://example.com/c", "file://remote-host/etc/c"])(
    "refuses %s",
    (input) => {
      expect(() => discoveryFileLocation(input)).toThrow(
        /"(http|ftp|file):\/\/[^"]*" is not a valid/,
      );
    },
  );
});

describe("kubeConfigProblems (clientcmd.Validate)", () => {
  const parse = (text: string) => parseKubeConfig(text, "test");
  it.each([
    ["a cluster-info kubeconfig", clusterInfoKubeconfig(TEST_CERT_PEM), []],
    [
      "a context naming a missing user and cluster",
      "clusters: [{name: a, cluster: {server: 'https://x'}}]\ncontexts: [{name: c, context: {cluster: b, user: u}}]\ncurrent-context: c\n",
      ['user "u" was not found for context "c"', 'cluster "b" was not found for context "c"'],
    ],
    [
      "a missing current context",
      "clusters: [{name: a, cluster: {server: 'https://x'}}]\ncurrent-context: nope\n",
      ["context was not found for specified context: nope"],
    ],
    [
      "clusters without a server",
      "clusters: [{name: '', cluster: {}}, {name: a, cluster: {insecure-skip-tls-verify: true}}]\n",
      ["default cluster has no server defined", 'no server found for cluster "a"'],
    ],
    [
      "CA data and file together",
      "clusters: [{name: a, cluster: {server: 'https://x', certificate-authority: /ca, certificate-authority-data: Zm9v}}]\n",
      ['certificate-authority-data and certificate-authority are both specified for cluster "a"'],
    ],
    [
      "client certificate data and file together, and two authentication methods",
      "users: [{name: u, user: {client-certificate: /c, client-certificate-data: Zm9v, token: t, username: a, password: b}}]\nclusters: [{name: a, cluster: {server: 'https://x'}}]\n",
      [
        'client-cert-data and client-cert are both specified for user "u"',
        'more than one authentication method found for user "u"; only one is allowed',
      ],
    ],
  ])("%s", (_name, text, expected) => {
    expect(kubeConfigProblems(parse(text))).toEqual(expected);
  });
});

describe("discoverFromFile", () => {
  const CA_FILE_CONFIG = discoveryFile(
    `    server: ${SERVER}\n    certificate-authority: pki/ca.crt`,
    "    client-certificate: /creds/client.crt\n    client-key: client.key",
  );

  it("embeds the files the kubeconfig refers to, resolving relative paths against its folder", async () => {
    const { opts, fake, reads, logs } = setup(
      {
        "/etc/join/discovery.conf": CA_FILE_CONFIG,
        "/etc/join/pki/ca.crt": TEST_CERT_PEM,
        "/creds/client.crt": "CERT",
        "/etc/join/client.key": "KEY",
      },
      () => ({ kubeconfig: clusterInfoKubeconfig(TEST_CERT_PEM) }),
    );
    const config = await discoverFromFile("file:///etc/join/discovery.conf", opts);
    expect(reads).toEqual([
      "/etc/join/discovery.conf",
      "/etc/join/pki/ca.crt",
      "/creds/client.crt",
      "/etc/join/client.key",
    ]);
    expect(config.clusters[0]!.cluster).toEqual({
      server: SERVER,
      "certificate-authority-data": b64(TEST_CERT_PEM),
    });
    expect(config.users[0]!.user).toEqual({
      "client-certificate-data": b64("CERT"),
      "client-key-data": b64("KEY"),
    });
    expect(config["current-context"]).toBe("joiner@kubernetes");
    // The cluster-info client is built from the embedded data, with the file's credentials.
    expect(fake.kubeconfigs[0]!.clusters[0]!.cluster).toEqual(config.clusters[0]!.cluster);
    expect(fake.kubeconfigs[0]!.users[0]!.user).toEqual(config.users[0]!.user);
    expect(logs).toContain(
      "[discovery] Using authentication credentials from the discovery file for validating TLS connection",
    );
  });

  it("embeds a token file, trimmed as client-go reads it", async () => {
    const { opts } = setup(
      {
        "/d.conf": discoveryFile(
          `    server: ${SERVER}\n    certificate-authority-data: ${b64(TEST_CERT_PEM)}`,
          "    tokenFile: /t",
        ),
        "/t": "abcdef.0123456789abcdef\n",
      },
      () => ({ kubeconfig: clusterInfoKubeconfig(TEST_CERT_PEM) }),
    );
    const config = await discoverFromFile("/d.conf", opts);
    expect(config.users[0]!.user).toEqual({ token: "abcdef.0123456789abcdef" });
  });

  it("reads cluster-info anonymously when the file has no credentials", async () => {
    const { opts, fake, logs } = setup({ "/d.conf": clusterInfoKubeconfig(TEST_CERT_PEM) }, () => ({
      kubeconfig: clusterInfoKubeconfig(TEST_CERT_PEM),
    }));
    const config = await discoverFromFile("/d.conf", opts);
    expect(clusterOf(config)!.cluster.server).toBe(SERVER);
    expect(fake.kubeconfigs[0]!.users).toEqual([]);
    expect(logs.some((l) => l.includes("does not contain authentication credentials"))).toBe(true);
  });

  it("fills in a missing CA from cluster-info, and warns about another server", async () => {
    const file = discoveryFile(
      `    server: https://lb.example:6443`,
      "    token: abcdef.0123456789abcdef",
    );
    const { opts, warnings } = setup({ "/d.conf": file }, () => ({
      kubeconfig: clusterInfoKubeconfig(TEST_CERT2_PEM),
    }));
    const config = await discoverFromFile("/d.conf", opts);
    const cluster = clusterOf(config)!.cluster;
    expect(cluster.server).toBe("https://lb.example:6443"); // kept: only the CA is synced
    expect(clusterCAData(cluster).toString()).toBe(TEST_CERT2_PEM);
    expect(warnings).toEqual([
      `[discovery] the API Server endpoint "https://lb.example:6443" in use is different from the endpoint "${SERVER}" which defined in the cluster-info ConfigMap`,
    ]);
  });

  it("keeps its own CA when cluster-info carries another", async () => {
    const { opts } = setup({ "/d.conf": clusterInfoKubeconfig(TEST_CERT_PEM) }, () => ({
      kubeconfig: clusterInfoKubeconfig(TEST_CERT2_PEM),
    }));
    const config = await discoverFromFile("/d.conf", opts);
    expect(clusterCAData(clusterOf(config)!.cluster).toString()).toBe(TEST_CERT_PEM);
  });

  it("goes on with the file when cluster-info is forbidden to it (one attempt, a warning)", async () => {
    const { opts, fake, warnings } = setup(
      { "/d.conf": clusterInfoKubeconfig(TEST_CERT_PEM) },
      () => forbidden(SERVER),
    );
    const config = await discoverFromFile("/d.conf", opts);
    expect(clusterOf(config)!.cluster.server).toBe(SERVER);
    expect(fake.attempts).toEqual([1]);
    expect(warnings[0]).toMatch(/Could not access the cluster-info ConfigMap/);
  });

  it.each([
    ["has no kubeconfig key", {}],
    ["holds no kubeconfig", { kubeconfig: "<html></html>" }],
  ])("goes on with the file when cluster-info %s", async (_name, data) => {
    const { opts, logs } = setup({ "/d.conf": clusterInfoKubeconfig(TEST_CERT_PEM) }, () => data);
    const config = await discoverFromFile("/d.conf", opts);
    expect(clusterOf(config)!.cluster.server).toBe(SERVER);
    expect(logs.some((l) => l.includes("isn't set up properly"))).toBe(true);
  });

  it("fails when cluster-info's kubeconfig has no usable cluster", async () => {
    const { opts } = setup({ "/d.conf": clusterInfoKubeconfig(TEST_CERT_PEM) }, () => ({
      kubeconfig: "apiVersion: v1\nkind: Config\nclusters: []\n",
    }));
    expect((await failure(discoverFromFile("/d.conf", opts))).message).toMatch(
      /the kubeconfig in the cluster-info ConfigMap is malformed/,
    );
  });

  it("retries other errors until the discovery timeout, then fails naming the file", async () => {
    const { opts, fake } = setup(
      { "/d.conf": clusterInfoKubeconfig(TEST_CERT_PEM) },
      () => refused(SERVER),
      {
        timeoutMs: 200,
        intervalMs: 50,
      },
    );
    const error = await failure(discoverFromFile("/d.conf", opts));
    expect(error.message).toMatch(
      /^could not read the cluster-info ConfigMap from https:\/\/cp\.example:6443 with the discovery file \/d\.conf within 200ms: .*ECONNREFUSED/,
    );
    // Ticks at 0, 50, 100 and 150 ms (none at the deadline); a loaded machine may start some late.
    expect(fake.attempts[0]).toBeGreaterThanOrEqual(2);
    expect(fake.attempts[0]).toBeLessThanOrEqual(4);
  });

  it.each([
    [
      "a missing file",
      {},
      /^cannot read the discovery file \/d\.conf: open \/d\.conf: no such file/,
    ],
    [
      "an HTML page",
      { "/d.conf": "<!doctype html><html><body>login</body></html>" },
      /is not a kubeconfig: it looks like an HTML/,
    ],
    [
      "another kind",
      { "/d.conf": "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n" },
      /its kind is "Pod", not "Config"/,
    ],
    ["a plain string", { "/d.conf": "hello" }, /is not a kubeconfig/],
    [
      "no cluster",
      { "/d.conf": "apiVersion: v1\nkind: Config\nclusters: []\n" },
      /^the discovery file \/d\.conf must define at least one cluster/,
    ],
    [
      "no cluster it can pick",
      {
        "/d.conf":
          "apiVersion: v1\nkind: Config\nclusters: [{name: a, cluster: {server: 'https://x'}}]\n",
      },
      /is malformed: it has neither an unnamed cluster nor a current context/,
    ],
    [
      "a context naming a missing user",
      {
        "/d.conf": discoveryFile(`    server: ${SERVER}`, "    token: t").replace(
          "user: joiner\ncurrent",
          "user: nobody\ncurrent",
        ),
      },
      /is invalid: user "nobody" was not found for context "joiner@kubernetes"/,
    ],
    [
      "an unreadable CA file",
      {
        "/d.conf": discoveryFile(
          `    server: ${SERVER}\n    certificate-authority: /missing/ca.crt`,
          "    token: t",
        ),
      },
      /^cannot read \/missing\/ca\.crt, the certificate-authority of the discovery file \/d\.conf/,
    ],
  ])("refuses %s", async (_name, files, message) => {
    const { opts, fake } = setup(files, () => ({}));
    expect((await failure(discoverFromFile("/d.conf", opts))).message).toMatch(message);
    expect(fake.kubeconfigs).toHaveLength(0);
  });
});
