import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../../../src/kube/types.js";
import { createWithCerts, renderKubeConfig } from "../../../../src/kubeconfig/build.js";
import {
  clientcmdWritesPreferences,
  clusterInfoConfigMap,
  clusterInfoConfigMapFromAdminConf,
  clusterInfoKubeconfig,
  clusterInfoProblem,
  clusterInfoUpToDate,
} from "../../../../src/manifests/cluster-info.js";
import { inTempDir, opensslCA, opensslPin, run } from "./tools.js";
import { expectValidObject } from "./valid.js";

// Known answer: kubeadm's dry-run fixture (cmd/kubeadm/app/util/apiclient, 2026,
// getClusterInfoConfigMap) holds a real kubeadm CA, the cluster-info kubeconfig built from it
// for server https://192.168.0.101:6443, and the BootstrapSigner's JWS of those bytes for token
// abcdef.abcdef0123456789. Our bytes must carry that exact signature.

const CA_B64 = readFileSync(
  join(import.meta.dirname, "fixtures/kubeadm-dryrun-ca.b64"),
  "utf8",
).trim();
const CA_PEM = Buffer.from(CA_B64, "base64").toString();
const SERVER = "https://192.168.0.101:6443";
const FIXTURE_JWS =
  "eyJhbGciOiJIUzI1NiIsImtpZCI6ImFiY2RlZiJ9..rh3cVKiU2mdt3CqHzC81sNE-4WQLRHMtXduHWfSbrIM";

const fixtureKubeconfig = (preferences: boolean) =>
  `apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: ${CA_B64}
    server: ${SERVER}
  name: ""
contexts: null
current-context: ""
kind: Config
${preferences ? "preferences: {}\n" : ""}users: null
`;

/** RFC 7515 detached JWS, HS256 keyed by the token secret, as the BootstrapSigner computes it. */
function detachedJWS(content: string, tokenID: string, tokenSecret: string): string {
  const b64 = (s: string) => Buffer.from(s).toString("base64url");
  const header = b64(JSON.stringify({ alg: "HS256", kid: tokenID }));
  const mac = createHmac("sha256", tokenSecret)
    .update(`${header}.${b64(content)}`)
    .digest("base64url");
  return `${header}..${mac}`;
}

const cluster = { "certificate-authority-data": CA_B64, server: SERVER };

describe("cluster-info kubeconfig", () => {
  it("is byte-identical to kubeadm's for v1.35: the fixture's JWS verifies it", () => {
    const text = clusterInfoKubeconfig(cluster, "v1.35.0");
    expect(text).toBe(fixtureKubeconfig(false));
    expect(detachedJWS(text, "abcdef", "abcdef0123456789")).toBe(FIXTURE_JWS);
  });

  it.each([
    ["v1.33.4", true],
    ["v1.34.0", false],
    ["v1.35.1", false],
    ["1.33", true],
  ])("%s prints preferences: %s (client-go 1.34 made the field omitzero)", (version, prefs) => {
    expect(clientcmdWritesPreferences(version)).toBe(prefs);
    expect(clusterInfoKubeconfig(cluster, version)).toBe(fixtureKubeconfig(prefs));
  });

  it("refuses a version it cannot read", () => {
    expect(() => clientcmdWritesPreferences("latest")).toThrow(
      /"latest" is not a Kubernetes version/,
    );
  });

  it("copies admin.conf's current cluster", async () => {
    const admin = renderKubeConfig(
      createWithCerts(SERVER, "kubernetes", "kubernetes-admin", CA_PEM, "KEY", "CERT"),
      { preferences: false },
    );
    const cm = clusterInfoConfigMapFromAdminConf(admin, "/etc/kubernetes/admin.conf", "v1.35.0");
    expect(cm).toEqual({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "cluster-info", namespace: "kube-public" },
      data: { kubeconfig: fixtureKubeconfig(false) },
    });
    await expectValidObject(cm);
  });

  it('is read by kubectl as a kubeconfig with one cluster named ""', async () => {
    await inTempDir(async (dir) => {
      const file = join(dir, "cluster-info.conf");
      await writeFile(file, clusterInfoKubeconfig(cluster, "v1.35.0"));
      const { stdout } = await run("kubectl", ["config", "view", "--raw", "-o", "json"], {
        env: { ...process.env, KUBECONFIG: file },
      });
      const view = JSON.parse(stdout) as { clusters: { name: string; cluster: object }[] };
      expect(view.clusters).toEqual([{ name: "", cluster }]);
    });
  });
});

describe("an existing cluster-info", () => {
  const desired = clusterInfoConfigMap(cluster, "v1.35.0");
  const signed = (cm: KubeObject): KubeObject => ({
    ...cm,
    data: { ...(cm["data"] as object), "jws-kubeconfig-abcdef": FIXTURE_JWS },
  });

  it("is accepted when it describes this cluster, signatures or not", () => {
    expect(clusterInfoProblem(desired, desired)).toBeUndefined();
    expect(clusterInfoProblem(signed(desired), desired)).toBeUndefined();
    expect(clusterInfoUpToDate(signed(desired), desired)).toBe(true);
    // Written by v1.33 (with preferences): same cluster, other bytes.
    const older = clusterInfoConfigMap(cluster, "v1.33.0");
    expect(clusterInfoProblem(older, desired)).toBeUndefined();
    expect(clusterInfoUpToDate(older, desired)).toBe(false);
  });

  it("is reported with both CA pins when another CA signed it", async () => {
    const other = await opensslCA();
    const existing = clusterInfoConfigMap(
      {
        "certificate-authority-data": Buffer.from(other.certPEM).toString("base64"),
        server: SERVER,
      },
      "v1.35.0",
    );
    const problem = clusterInfoProblem(existing, desired);
    expect(problem).toContain(
      "ConfigMap kube-public/cluster-info already exists with another cluster CA",
    );
    expect(problem).toContain(`(${other.pin})`);
    expect(problem).toContain(`(${await opensslPin(CA_PEM)})`);
  });

  it.each([
    [
      "another server",
      clusterInfoConfigMap({ ...cluster, server: "https://10.0.0.1:6443" }, "v1.35.0"),
      `with API server "https://10.0.0.1:6443" instead of "${SERVER}"`,
    ],
    [
      "no kubeconfig",
      { ...desired, data: { "jws-kubeconfig-abcdef": FIXTURE_JWS } },
      'not usable for discovery: it has no "kubeconfig" key',
    ],
    [
      "a kubeconfig that is not YAML",
      { ...desired, data: { kubeconfig: "clusters: [" } },
      "not usable for discovery: failed to load kubeconfig file its kubeconfig",
    ],
    [
      "two clusters",
      {
        ...desired,
        data: {
          kubeconfig: renderKubeConfig(
            {
              ...createWithCerts(SERVER, "a", "u", CA_PEM, "K", "C"),
              clusters: [
                { name: "a", cluster },
                { name: "b", cluster },
              ],
            },
            { preferences: false },
          ),
        },
      },
      "its kubeconfig holds 2 clusters instead of one",
    ],
  ])("is reported when it has %s", (_what, existing, message) => {
    expect(clusterInfoProblem(existing, desired)).toContain(message);
  });
});
