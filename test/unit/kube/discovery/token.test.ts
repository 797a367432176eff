import { describe, expect, it } from "vitest";
import { discoverWithToken, type DiscoveryOptions } from "../../../../src/kube/discovery/index.js";
import { clusterCAData, clusterOf } from "../../../../src/kubeconfig/bootstrap.js";
import { computeDetachedSignature } from "../../../support/sim/apiserver/controllers/jws.js";
import {
  fakeClients,
  refused,
  TEST_CERT2_PEM,
  TEST_CERT2_PIN,
  TEST_CERT_PEM,
  TEST_CERT_PIN,
  type Answer,
} from "./fake-client.js";

// Token discovery against scripted cluster-info answers: what is retried, what fails at once,
// what each of the two clients is built from. Signatures come from the simulated
// BootstrapSigner's JWS code, written independently of src/pki/jws.ts.

const TOKEN_ID = "abcdef";
const TOKEN_SECRET = "0123456789abcdef";
const TOKEN = `${TOKEN_ID}.${TOKEN_SECRET}`;
const ENDPOINT = "192.168.1.1:6443";
const CLUSTER_SERVER = "https://cp.example:6443"; // cluster-info's controlPlaneEndpoint

/** cluster-info's kubeconfig as kubeadm writes it (clusterinfo.go). */
function clusterInfoKubeconfig(caPEM: string, server = CLUSTER_SERVER): string {
  return [
    "apiVersion: v1",
    "clusters:",
    "- cluster:",
    `    certificate-authority-data: ${Buffer.from(caPEM).toString("base64")}`,
    `    server: ${server}`,
    '  name: ""',
    "contexts: null",
    'current-context: ""',
    "kind: Config",
    "users: null",
    "",
  ].join("\n");
}

const KUBECONFIG = clusterInfoKubeconfig(TEST_CERT_PEM);

function signed(kubeconfig = KUBECONFIG, secret = TOKEN_SECRET): Record<string, string> {
  return {
    kubeconfig,
    [`jws-kubeconfig-${TOKEN_ID}`]: computeDetachedSignature(kubeconfig, TOKEN_ID, secret),
  };
}

function options(over: Partial<DiscoveryOptions>, script: (c: number, a: number) => Answer) {
  const fake = fakeClients(script);
  const logs: string[] = [];
  const opts: DiscoveryOptions = {
    apiServerEndpoint: ENDPOINT,
    token: TOKEN,
    caCertHashes: [TEST_CERT_PIN],
    unsafeSkipCAVerification: false,
    timeoutMs: 10_000,
    intervalMs: 10,
    log: (l) => logs.push(l),
    clientFor: fake.clientFor,
    ...over,
  };
  return { fake, logs, opts };
}

async function failure(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error("expected a failure");
}

describe("discoverWithToken: success", () => {
  it("returns cluster-info's kubeconfig after an insecure and a pinned read of identical content", async () => {
    const { fake, opts, logs } = options({}, () => signed());
    const config = await discoverWithToken(opts);
    const cluster = clusterOf(config)!;
    expect(cluster.name).toBe("");
    expect(cluster.cluster.server).toBe(CLUSTER_SERVER); // not the endpoint asked
    expect(clusterCAData(cluster.cluster).toString()).toBe(TEST_CERT_PEM);

    // First client: kubeadm's BuildInsecureBootstrapKubeConfig.
    expect(fake.kubeconfigs).toHaveLength(2);
    const [insecure, secure] = fake.kubeconfigs;
    expect(insecure!.clusters).toEqual([
      {
        name: "kubernetes",
        cluster: { server: `https://${ENDPOINT}`, "insecure-skip-tls-verify": true },
      },
    ]);
    expect(insecure!["current-context"]).toBe("token-bootstrap-client@kubernetes");
    expect(insecure!.users).toEqual([]);
    // Second client: the pinned CA bundle, TLS verified, still anonymous.
    expect(secure!.clusters).toEqual([
      {
        name: "kubernetes",
        cluster: {
          server: `https://${ENDPOINT}`,
          "certificate-authority-data": Buffer.from(TEST_CERT_PEM).toString("base64"),
        },
      },
    ]);
    expect(secure!.users).toEqual([]);
    expect(fake.attempts).toEqual([1, 1]);
    expect(logs.join("\n")).not.toContain(TOKEN_SECRET);
  });

  it("waits, every interval, until the BootstrapSigner's signature appears", async () => {
    const { fake, opts, logs } = options({}, (client, attempt) =>
      client === 0 && attempt < 2 ? { kubeconfig: KUBECONFIG } : signed(),
    );
    await discoverWithToken(opts);
    expect(fake.attempts).toEqual([3, 1]);
    expect(
      logs.filter((l) =>
        l.includes(
          `could not find a JWS signature in the cluster-info ConfigMap for token ID "${TOKEN_ID}"`,
        ),
      ),
    ).toHaveLength(2);
  });

  it("retries an API server that does not answer yet", async () => {
    const { fake, opts } = options({}, (client, attempt) =>
      client === 0 && attempt < 2 ? refused(`https://${ENDPOINT}`) : signed(),
    );
    await discoverWithToken(opts);
    expect(fake.attempts).toEqual([3, 1]);
  });

  it("accepts a CA bundle whose second certificate is the pinned one, and trusts the whole bundle", async () => {
    const bundle = TEST_CERT2_PEM + TEST_CERT_PEM;
    const kubeconfig = clusterInfoKubeconfig(bundle);
    const { fake, opts } = options({ caCertHashes: [TEST_CERT_PIN] }, () => signed(kubeconfig));
    const config = await discoverWithToken(opts);
    expect(clusterCAData(clusterOf(config)!.cluster).toString()).toBe(bundle);
    expect(fake.kubeconfigs[1]!.clusters[0]!.cluster["certificate-authority-data"]).toBe(
      Buffer.from(bundle).toString("base64"),
    );
  });

  it("accepts several pins of which one matches, in any case", async () => {
    const { opts } = options(
      {
        caCertHashes: [
          "sha256:" + "ab".repeat(32),
          TEST_CERT_PIN.toUpperCase().replace("SHA256", "sha256"),
        ],
      },
      () => signed(),
    );
    await expect(discoverWithToken(opts)).resolves.toBeDefined();
  });

  it("ignores text around the PEM blocks, as certutil.ParseCertsPEM", async () => {
    const kubeconfig = clusterInfoKubeconfig(`junk before\n${TEST_CERT_PEM}\nABC`);
    const { opts } = options({}, () => signed(kubeconfig));
    await expect(discoverWithToken(opts)).resolves.toBeDefined();
  });

  it("with no pins and unsafeSkipCAVerification, stops after the signed insecure read", async () => {
    const { fake, opts, logs } = options({ caCertHashes: [], unsafeSkipCAVerification: true }, () =>
      signed(),
    );
    const config = await discoverWithToken(opts);
    expect(clusterOf(config)!.cluster.server).toBe(CLUSTER_SERVER);
    expect(fake.kubeconfigs).toHaveLength(1);
    expect(logs.at(-1)).toContain("no TLS pinning was specified");
  });
});

describe("discoverWithToken: refusals that do not wait", () => {
  const atOnce: [string, Partial<DiscoveryOptions>, (c: number, a: number) => Answer, RegExp][] = [
    [
      "a signature made with another secret",
      {},
      () => signed(KUBECONFIG, "ffffffffffffffff"),
      /failed to verify the JWS signature of the cluster-info ConfigMap for token ID "abcdef"/,
    ],
    [
      "a signature of other content",
      {},
      () => ({ ...signed(), kubeconfig: KUBECONFIG + "# tampered\n" }),
      /failed to verify the JWS signature .* token ID "abcdef"/,
    ],
    [
      "an empty signature",
      {},
      () => ({ kubeconfig: KUBECONFIG, "jws-kubeconfig-abcdef": "" }),
      /token id "abcdef" is invalid for this cluster or it has expired/,
    ],
    [
      "no kubeconfig key",
      {},
      () => ({ "jws-kubeconfig-abcdef": computeDetachedSignature("", TOKEN_ID, TOKEN_SECRET) }),
      /there is no kubeconfig key in the cluster-info ConfigMap/,
    ],
    [
      "a CA matching no pin",
      { caCertHashes: [TEST_CERT2_PIN, "sha256:" + "ab".repeat(32)] },
      () => signed(),
      new RegExp(
        `its public key hashes are ${TEST_CERT_PIN} but the pinned ones are ${TEST_CERT2_PIN}, sha256:${"ab".repeat(32)}`,
      ),
    ],
    [
      "a CA bundle holding no certificate",
      {},
      () => signed(clusterInfoKubeconfig("not a certificate")),
      /holds no PEM certificate/,
    ],
    [
      "a cluster-info kubeconfig without a usable cluster",
      {},
      () =>
        signed(
          "apiVersion: v1\nkind: Config\nclusters:\n- name: a\n  cluster:\n    server: https://x\ncurrent-context: ''\n",
        ),
      /is malformed: it has neither an unnamed cluster nor a current context/,
    ],
  ];

  it.each(atOnce)("%s", async (_name, over, script, message) => {
    const { fake, opts } = options({ ...over, timeoutMs: 60_000, intervalMs: 30_000 }, script);
    const started = Date.now();
    const error = await failure(discoverWithToken(opts));
    expect(error.message).toMatch(message);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(fake.attempts[0]).toBe(1);
    expect(fake.kubeconfigs).toHaveLength(1); // never got to the pinned read
    expect(error.message).not.toContain(TOKEN_SECRET);
  });

  it("refuses a second read whose kubeconfig differs from the first", async () => {
    const { fake, opts } = options({}, (client) =>
      client === 0 ? signed() : signed(KUBECONFIG.replace("cp.example", "evil.example")),
    );
    const error = await failure(discoverWithToken(opts));
    expect(error.message).toBe(
      "the second kubeconfig from the cluster-info ConfigMap (using validated TLS) was different from the first",
    );
    expect(fake.attempts).toEqual([1, 1]);
  });

  it.each([
    [
      "a malformed token",
      { token: "abcdef.0123456789ABCDEF" },
      /the discovery token does not have the form/,
    ],
    [
      "a malformed pin",
      { caCertHashes: ["sha256:1234"] },
      /invalid discovery token CA certificate hash: invalid hash "sha256:1234"/,
    ],
    ["no pin without the unsafe flag", { caCertHashes: [] }, /without caCertHashes can be unsafe/],
    ["no endpoint", { apiServerEndpoint: "" }, /needs the API server endpoint/],
  ])("refuses %s before any request", async (_name, over, message) => {
    const { fake, opts } = options(over, () => signed());
    const error = await failure(discoverWithToken(opts));
    expect(error.message).toMatch(message);
    expect(error.message).not.toContain("0123456789ABCDEF");
    expect(fake.kubeconfigs).toHaveLength(0);
  });
});

describe("discoverWithToken: waits bounded by the discovery timeout", () => {
  it("names the token id when its signature never appears", async () => {
    const { opts } = options({ timeoutMs: 300, intervalMs: 50 }, () => ({
      kubeconfig: KUBECONFIG,
    }));
    const started = Date.now();
    const error = await failure(discoverWithToken(opts));
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(error.message).toMatch(
      /^token id "abcdef" is invalid for this cluster or it has expired: no JWS signature for it appeared in the cluster-info ConfigMap of https:\/\/192\.168\.1\.1:6443 within 300ms/,
    );
    expect(error.message).toContain("kubeadm token create");
  });

  it("says what the last request ran into when the API server never answers", async () => {
    const { opts } = options({ timeoutMs: 200, intervalMs: 50 }, () =>
      refused(`https://${ENDPOINT}`),
    );
    const error = await failure(discoverWithToken(opts));
    expect(error.message).toMatch(
      /^could not read the cluster-info ConfigMap from https:\/\/192\.168\.1\.1:6443 within 200ms: getting ConfigMap kube-public\/cluster-info: no response .*ECONNREFUSED/,
    );
  });

  it("caps the interval at the timeout, as kubeadm (one attempt; the next tick is the deadline)", async () => {
    const { fake, opts } = options({ timeoutMs: 200, intervalMs: 60_000 }, () => ({
      kubeconfig: KUBECONFIG,
    }));
    const started = Date.now();
    await failure(discoverWithToken(opts));
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(190);
    expect(elapsed).toBeLessThan(2_000);
    expect(fake.attempts[0]).toBe(1);
  });

  it("waits for the signature again on the pinned read", async () => {
    const { fake, opts } = options({}, (client, attempt) =>
      client === 1 && attempt === 0 ? { kubeconfig: KUBECONFIG } : signed(),
    );
    await discoverWithToken(opts);
    expect(fake.attempts).toEqual([1, 2]);
  });
});
