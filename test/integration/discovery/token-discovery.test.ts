import { execFileSync } from "node:child_process";
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kubeClientFromKubeConfig } from "../../../src/kube/client.js";
import {
  discoverTLSBootstrapConfig,
  discoverWithToken,
  type DiscoveryOptions,
} from "../../../src/kube/discovery/index.js";
import { clusterCAData, clusterOf } from "../../../src/kubeconfig/bootstrap.js";
import { renderKubeConfig } from "../../../src/kubeconfig/build.js";
import { toYAML } from "../../../src/config/yaml.js";
import { parseKubeConfig } from "../../../src/kubeconfig/parse.js";
import { freePort } from "../../support/ports.js";
import { computeDetachedSignature } from "../../support/sim/apiserver/index.js";
import {
  EXPIRED_TOKEN,
  TOKEN,
  UNSIGNED_TOKEN,
  startDiscoveryCluster,
  type DiscoveryCluster,
} from "./sim-cluster.js";

// Token discovery against the simulated control plane (test/support/sim): init's own
// certificates and bootstrap-token phase, the fake API server's anonymous access to
// cluster-info, the fake BootstrapSigner's signatures. The destructive cases (controllers
// stopped, cluster-info edited by hand) run last.

const [TOKEN_ID, TOKEN_SECRET] = TOKEN.split(".") as [string, string];
const OTHER_PIN = "sha256:" + "ab".repeat(32);

let c: DiscoveryCluster;

beforeAll(async () => {
  c = await startDiscoveryCluster();
}, 60_000);
afterAll(async () => {
  await c?.stop();
});

function options(over: Partial<DiscoveryOptions> = {}): DiscoveryOptions & { logs: string[] } {
  const logs: string[] = [];
  return {
    apiServerEndpoint: c.endpoint,
    token: TOKEN,
    caCertHashes: [c.caPin],
    unsafeSkipCAVerification: false,
    timeoutMs: 20_000,
    intervalMs: 100,
    log: (l) => logs.push(l),
    logs,
    ...over,
  };
}

async function timed(p: Promise<unknown>): Promise<{ error: Error; ms: number }> {
  const started = Date.now();
  try {
    await p;
  } catch (e) {
    return { error: e as Error, ms: Date.now() - started };
  }
  throw new Error("expected discovery to fail");
}

describe("token discovery against the simulated control plane", () => {
  it("returns the cluster's server and CA, and the bootstrap kubeconfig authenticates", async () => {
    const o = options();
    const config = await discoverWithToken(o);
    const cluster = clusterOf(config)!.cluster;
    expect(cluster.server).toBe(c.server);
    expect(cluster.server).toBe(`https://${c.endpoint}`);
    expect(clusterCAData(cluster).toString()).toBe(c.caPEM);
    expect(o.logs.join("\n")).not.toContain(TOKEN_SECRET);

    const { tlsBootstrap } = await discoverTLSBootstrapConfig(
      { bootstrapToken: { apiServerEndpoint: c.endpoint, token: TOKEN, caCertHashes: [c.caPin] } },
      { timeoutMs: 20_000, intervalMs: 100, log: () => undefined, readFile: (p) => readFile(p) },
    );
    // The TLS bootstrap identity may list CSRs (system:node-bootstrapper), over verified TLS.
    const client = await kubeClientFromKubeConfig(
      renderKubeConfig(tlsBootstrap, { preferences: false }),
      {
        description: "bootstrap-kubelet.conf",
      },
    );
    await expect(
      client.list("certificates.k8s.io/v1", "CertificateSigningRequest"),
    ).resolves.toEqual([]);
  });

  it("accepts several pins of which one matches", async () => {
    await expect(
      discoverWithToken(options({ caCertHashes: [OTHER_PIN, c.caPin] })),
    ).resolves.toBeDefined();
  });

  it("fails at once on a CA matching no pin, listing the pins and the CA's hash", async () => {
    const { error, ms } = await timed(discoverWithToken(options({ caCertHashes: [OTHER_PIN] })));
    expect(error.message).toBe(
      `the cluster CA found in the cluster-info ConfigMap is not pinned: its public key hashes are ${c.caPin} but the pinned ones are ${OTHER_PIN}`,
    );
    expect(ms).toBeLessThan(3_000); // the timeout is 20 s
  });

  it("waits out a token without the signing usage, then names its id", async () => {
    const { error, ms } = await timed(
      discoverWithToken(options({ token: UNSIGNED_TOKEN, timeoutMs: 1_000, intervalMs: 200 })),
    );
    expect(ms).toBeGreaterThanOrEqual(990);
    expect(error.message).toMatch(
      /^token id "nosign" is invalid for this cluster or it has expired/,
    );
    expect(error.message).not.toContain("0123456789abcdef");
  });

  it("waits out an expired token, then names its id", async () => {
    const { error } = await timed(
      discoverWithToken(options({ token: EXPIRED_TOKEN, timeoutMs: 1_000, intervalMs: 200 })),
    );
    expect(error.message).toMatch(
      /^token id "expird" is invalid for this cluster or it has expired/,
    );
    expect(Object.keys(c.clusterInfo().data as object)).not.toContain("jws-kubeconfig-expird");
  });

  it("waits out an API server that does not answer, then says so", async () => {
    const endpoint = `127.0.0.1:${await freePort()}`;
    const { error } = await timed(
      discoverWithToken(options({ apiServerEndpoint: endpoint, timeoutMs: 600, intervalMs: 200 })),
    );
    expect(error.message).toMatch(
      new RegExp(
        `^could not read the cluster-info ConfigMap from https://${endpoint} within 600ms: .*ECONNREFUSED`,
      ),
    );
  });

  it("trusts a CA bundle whose second certificate is the pinned cluster CA", async () => {
    const original = { ...(c.clusterInfo().data as Record<string, string>) };
    const otherCA = execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-keyout",
        "/dev/null",
        "-subj",
        "/CN=another-ca",
        "-days",
        "1",
      ],
      { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] },
    );
    const bundle = otherCA + c.caPEM;
    const info = parseKubeConfig(original.kubeconfig!, "cluster-info");
    info.clusters[0]!.cluster["certificate-authority-data"] =
      Buffer.from(bundle).toString("base64");
    const kubeconfig = toYAML({ ...info, contexts: null, users: null });
    try {
      c.setClusterInfoData({ kubeconfig });
      await c.signed(TOKEN_ID); // the BootstrapSigner signs the new content
      const config = await discoverWithToken(options());
      expect(clusterCAData(clusterOf(config)!.cluster).toString()).toBe(bundle);
    } finally {
      c.setClusterInfoData({ kubeconfig: original.kubeconfig! });
      await c.signed(TOKEN_ID);
    }
  });

  describe("with the controllers stopped and cluster-info edited by hand", () => {
    let kubeconfig: string;
    const goodSignature = () => computeDetachedSignature(kubeconfig, TOKEN_ID, TOKEN_SECRET);

    beforeAll(() => {
      c.stopControllers();
      kubeconfig = (c.clusterInfo().data as Record<string, string>).kubeconfig!;
    });

    it("fails at once on a tampered signature, naming the token id", async () => {
      const sig = goodSignature();
      const tampered = sig.slice(0, -2) + (sig.endsWith("AA") ? "AB" : "AA");
      c.setClusterInfoData({ kubeconfig, [`jws-kubeconfig-${TOKEN_ID}`]: tampered });
      const { error, ms } = await timed(discoverWithToken(options()));
      expect(error.message).toBe(
        `failed to verify the JWS signature of the cluster-info ConfigMap for token ID "${TOKEN_ID}": this API server can't be trusted`,
      );
      expect(ms).toBeLessThan(3_000);
    });

    it("refuses a second read (over verified TLS) that differs from the first", async () => {
      c.setClusterInfoData({ kubeconfig, [`jws-kubeconfig-${TOKEN_ID}`]: goodSignature() });
      const o = options();
      // Between the two reads (announced by this line), the content changes but keeps its
      // now stale signature: only the byte comparison can catch it.
      const log = o.log;
      o.log = (line) => {
        log(line);
        if (line.includes("again to validate TLS")) {
          c.setClusterInfoData({
            kubeconfig: kubeconfig + "# changed\n",
            [`jws-kubeconfig-${TOKEN_ID}`]: goodSignature(),
          });
        }
      };
      const { error } = await timed(discoverWithToken(o));
      expect(error.message).toBe(
        "the second kubeconfig from the cluster-info ConfigMap (using validated TLS) was different from the first",
      );
    });
  });
});
