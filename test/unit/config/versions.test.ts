import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  DEFAULT_KUBERNETES_VERSION,
  RELEASES,
  SUPPORTED_RANGE,
  kubernetesVersionProblem,
  releaseFor,
} from "../../../src/config/versions.js";
import { resolveKubernetesVersion } from "../../../src/node/release-version.js";

const NEWEST = RELEASES[RELEASES.length - 1]!;

// A stand-in for dl.k8s.io/release: a real HTTP server serving label files.
let labels: Record<string, string> = {};
const requests: string[] = [];
let server: Server;
let baseURL: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    requests.push(req.url ?? "");
    const name = (req.url ?? "").replace(/^\/release\//, "").replace(/\.txt$/, "");
    const body = labels[name];
    if (body === undefined) {
      res.writeHead(404).end("not found");
      return;
    }
    res.writeHead(200, { "content-type": "text/plain" }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/release`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe("the version table", () => {
  it("covers v1.33 to v1.37, one row per minor, in order", () => {
    expect(RELEASES.map((r) => r.minor)).toEqual([33, 34, 35, 36, 37]);
    expect(SUPPORTED_RANGE).toBe("v1.33 to v1.37");
    for (const r of RELEASES) {
      expect(r.knownPatch).toMatch(new RegExp(`^v1\\.${r.minor}\\.\\d+$`));
      expect(r.etcdVersion).toMatch(/^3\.\d+\.\d+-\d+$/);
      expect(r.coreDNSVersion).toMatch(/^v1\.\d+\.\d+$/);
      expect(r.pauseVersion).toMatch(/^3\.\d+(\.\d+)?$/);
    }
  });

  it("records the behaviour changes between releases", () => {
    const by = (minor: number) => releaseFor(`v1.${minor}.0`).behaviour;
    expect([33, 34, 35, 36, 37].map((m) => by(m).probeNamedPort)).toEqual([
      false,
      true,
      true,
      true,
      true,
    ]);
    expect([33, 34, 35, 36, 37].map((m) => by(m).podInfraContainerImageFlag)).toEqual([
      true,
      true,
      false,
      false,
      false,
    ]);
    expect(releaseFor("v1.33.0").featureGates.NodeLocalCRISocket).toBe(false);
    expect(releaseFor("v1.34.0").featureGates.NodeLocalCRISocket).toBe(true);
    expect(releaseFor("v1.37.0").graduatedFeatureGates).toContain("NodeLocalCRISocket");
  });

  it.each(["v1.35.2", "1.35.2", "v1.35", "v1.35.0-rc.1"])("finds the row for %s", (v) => {
    expect(releaseFor(v).minor).toBe(35);
  });

  it.each([
    ["v1.30.2", "Kubernetes version v1.30.2 is not supported: kubeforge supports v1.33 to v1.37"],
    ["1.38.0", "Kubernetes version v1.38.0 is not supported: kubeforge supports v1.33 to v1.37"],
    ["v2.35.0", "Kubernetes version v2.35.0 is not supported"],
    ["banana", '"banana" is not a Kubernetes version'],
  ])("refuses %s naming the range", (v, message) => {
    expect(() => releaseFor(v)).toThrow(message);
  });

  it("uses kubeadm's default label", () => {
    expect(DEFAULT_KUBERNETES_VERSION).toBe("stable-1");
    expect(kubernetesVersionProblem(DEFAULT_KUBERNETES_VERSION)).toBeUndefined();
    expect(kubernetesVersionProblem("stable-1.30")).toContain("not supported");
    expect(kubernetesVersionProblem("newest")).toContain("neither a version");
  });
});

describe("the images each release's kubeadm names", () => {
  // `kubeadm config images list --kubernetes-version V` of each release, as minikube's bot
  // records it (kubernetes/minikube pkg/minikube/constants/constants_kubeadm_images.go):
  // [etcd, CoreDNS, pause].
  it.each([
    ["v1.33.0", "3.5.21-0", "v1.12.0", "3.10"],
    ["v1.33.5", "3.5.21-0", "v1.12.0", "3.10"],
    ["v1.33.6", "3.5.24-0", "v1.12.0", "3.10"],
    ["v1.33.13", "3.5.24-0", "v1.12.0", "3.10"],
    ["v1.34.0", "3.6.4-0", "v1.12.1", "3.10.1"],
    ["v1.34.1", "3.6.4-0", "v1.12.1", "3.10.1"],
    ["v1.34.2", "3.6.5-0", "v1.12.1", "3.10.1"],
    ["v1.34.12", "3.6.5-0", "v1.12.1", "3.10.1"],
    ["v1.35.0", "3.6.6-0", "v1.13.1", "3.10.1"],
    ["v1.35.9", "3.6.6-0", "v1.13.1", "3.10.1"],
    ["v1.36.0", "3.6.8-0", "v1.14.2", "3.10.2"],
    ["v1.36.5", "3.6.8-0", "v1.14.2", "3.10.2"],
    ["v1.37.0", "3.7.0-0", "v1.14.6", "3.10.2"],
    ["v1.37.1", "3.7.0-0", "v1.14.6", "3.10.2"],
  ])("%s: etcd %s, CoreDNS %s, pause %s", (version, etcd, coreDNS, pause) => {
    const r = releaseFor(version);
    expect([r.etcdVersion, r.coreDNSVersion, r.pauseVersion]).toEqual([etcd, coreDNS, pause]);
  });

  it("gives a minor alone, and a build of a patch, the tags of the patch's release", () => {
    expect(releaseFor("v1.33").etcdVersion).toBe("3.5.24-0");
    expect(releaseFor("1.34.1").etcdVersion).toBe("3.6.4-0");
    expect(releaseFor("v1.33.5+abc123").etcdVersion).toBe("3.5.21-0");
  });
});

describe("resolveKubernetesVersion", () => {
  const warnings: string[] = [];
  const opts = () => ({
    baseURL,
    warn: (m: string) => warnings.push(m),
    fetch: globalThis.fetch,
    env: {},
  });

  it("returns exact versions without going online", async () => {
    requests.length = 0;
    await expect(resolveKubernetesVersion("1.35.2", opts())).resolves.toMatchObject({
      version: "v1.35.2",
      release: { minor: 35 },
    });
    expect(requests).toEqual([]);
  });

  it.each([
    ["stable", "v1.36.4\n", "v1.36.4", 36],
    ["stable-1", "v1.37.2", "v1.37.2", 37],
    ["stable-1.35", "v1.35.9", "v1.35.9", 35],
    ["latest-1.37", "v1.37.3-rc.0", "v1.37.3-rc.0", 37],
    ["release/stable-1.34", "v1.34.8", "v1.34.8", 34],
  ])("resolves %s through <base>/<label>.txt", async (spec, body, version, minor) => {
    labels = { [spec.replace("release/", "")]: body };
    requests.length = 0;
    const resolved = await resolveKubernetesVersion(spec, opts());
    expect(resolved).toMatchObject({ version, release: { minor } });
    expect(resolved.source).toContain(`${baseURL}/${spec.replace("release/", "")}.txt`);
    expect(requests).toEqual([`/release/${spec.replace("release/", "")}.txt`]);
  });

  it("re-resolves a label newer than the table as stable-1.<newest>, as kubeadm clamps to its minor", async () => {
    labels = { stable: "v1.38.1", [`stable-1.${NEWEST.minor}`]: "v1.37.5" };
    warnings.length = 0;
    const resolved = await resolveKubernetesVersion("stable", opts());
    expect(resolved.version).toBe("v1.37.5");
    expect(warnings).toEqual([
      expect.stringContaining(
        "stable resolved to v1.38.1, newer than the newest version kubeforge supports (v1.37)",
      ),
    ]);
  });

  it("falls back to the newest knownPatch when the clamped label cannot be fetched", async () => {
    labels = { latest: "v1.39.0-alpha.1" };
    warnings.length = 0;
    const resolved = await resolveKubernetesVersion("latest", opts());
    expect(resolved.version).toBe(NEWEST.knownPatch);
    expect(warnings[1]).toContain(`${baseURL}/stable-1.37.txt`);
  });

  it("refuses a label whose answer is older than the table", async () => {
    labels = { stable: "v1.31.4" };
    await expect(resolveKubernetesVersion("stable", opts())).rejects.toThrow(
      "Kubernetes version v1.31.4 is not supported: kubeforge supports v1.33 to v1.37",
    );
  });

  it("refuses a pinned label outside the table before fetching", async () => {
    requests.length = 0;
    await expect(resolveKubernetesVersion("stable-1.30", opts())).rejects.toThrow(
      "v1.30 is not supported",
    );
    expect(requests).toEqual([]);
  });

  it.each([
    ["stable-1.35", "v1.35"],
    ["stable", NEWEST.knownPatch],
    ["stable-1", NEWEST.knownPatch],
  ])(
    "falls back to the table for %s on a 404, with a warning naming the URL",
    async (spec, expected) => {
      labels = {};
      warnings.length = 0;
      const resolved = await resolveKubernetesVersion(spec, opts());
      expect(resolved.version.startsWith(expected)).toBe(true);
      expect(resolved.version).toBe(releaseFor(resolved.version).knownPatch);
      expect(warnings).toEqual([
        expect.stringContaining(`${baseURL}/${spec}.txt (HTTP status 404)`),
      ]);
    },
  );

  it("falls back when the server answers something that is not a version", async () => {
    labels = { "stable-1.36": "<html>oops</html>" };
    warnings.length = 0;
    const resolved = await resolveKubernetesVersion("stable-1.36", opts());
    expect(resolved.version).toBe(releaseFor("v1.36").knownPatch);
    expect(warnings[0]).toContain("is not a version");
  });

  it("falls back when the base URL is unreachable (offline)", async () => {
    warnings.length = 0;
    // Port 9 on localhost: connection refused, no network needed.
    const resolved = await resolveKubernetesVersion("stable-1.34", {
      baseURL: "http://127.0.0.1:9/release",
      warn: (m) => warnings.push(m),
      timeoutMs: 2000,
      fetch: globalThis.fetch,
      env: {},
    });
    expect(resolved.version).toBe(releaseFor("v1.34").knownPatch);
    expect(resolved.source).toContain("offline fallback");
    expect(warnings[0]).toContain("http://127.0.0.1:9/release/stable-1.34.txt");
  });

  it("reads the base URL from KUBEFORGE_RELEASE_BASE_URL", async () => {
    labels = { "stable-1.35": "v1.35.11" };
    const resolved = await resolveKubernetesVersion("stable-1.35", {
      env: { KUBEFORGE_RELEASE_BASE_URL: `${baseURL}/` },
      fetch: globalThis.fetch,
    });
    expect(resolved.version).toBe("v1.35.11");
  });

  it.each(["ci/latest", "v1.35.2.1", "stable-2.0x", "lts"])("refuses %s", async (spec) => {
    await expect(resolveKubernetesVersion(spec, opts())).rejects.toThrow(spec);
  });
});
