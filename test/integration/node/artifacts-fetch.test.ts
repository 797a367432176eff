import { createHash } from "node:crypto";
import { copyFile, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { releaseArtifacts } from "../../../src/node/artifacts/catalog.js";
import {
  fetchArtifact,
  fetchKubeletOverride,
  type FetchOptions,
} from "../../../src/node/artifacts/fetch.js";
import type { Artifact } from "../../../src/node/artifacts/types.js";
import {
  startReleaseServer,
  type Fault,
  type ReleaseServer,
} from "../../support/release-server.js";

// Downloads from a local HTTPS server with the official URL layouts (test/support/release-server.ts):
// checksums of both published formats, GitHub's redirects, the cache's reuse and repair, and each
// fault a release download meets. Every failure must name the URL and leave the cache empty.

let server: ReleaseServer;
let scratch: string;

const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const pathOf = (url: string) => new URL(url).pathname;

beforeAll(async () => {
  server = await startReleaseServer();
  scratch = await mkdtemp(join(tmpdir(), "kubeforge-artifacts-fetch-"));
});

afterAll(async () => {
  await server?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

let dirs = 0;
function options(extra: Partial<FetchOptions> = {}) {
  const lines: string[] = [];
  const cacheDir = join(scratch, `cache-${++dirs}`);
  return {
    lines,
    opts: { cacheDir, ca: server.ca, retries: 1, log: (l: string) => lines.push(l), ...extra },
  };
}

/** Every file under `dir` (relative paths); [] when it does not exist. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => !e.isDirectory()).map((e) => join(e.parentPath, e.name));
}

function kubelet(version: string, arch = "amd64"): Artifact {
  const url = `${server.sources.kubernetes}/${version}/bin/linux/${arch}/kubelet`;
  return { name: "kubelet", version, arch, url, checksumUrl: `${url}.sha256`, format: "binary" };
}

describe("fetchArtifact from the release layout", () => {
  it("downloads, verifies and caches kubelet, kubectl, crictl and the CNI plugins", async () => {
    const { opts } = options();
    const artifacts = releaseArtifacts("v1.35.2", "x64", server.sources);
    const fetched = await Promise.all(artifacts.map((a) => fetchArtifact(a, opts)));

    for (const [i, f] of fetched.entries()) {
      const served = await server.payload(pathOf(artifacts[i]!.url));
      expect(f.sha256).toBe(sha256(served));
      expect(f.source).toBe(artifacts[i]!.url);
      expect(f.path.startsWith(opts.cacheDir)).toBe(true);
    }
    const [kubeletF, kubectlF, crictlF, cniF] = fetched;
    expect(await readFile(kubeletF!.path)).toEqual(await server.payload(pathOf(artifacts[0]!.url)));
    expect((await stat(kubeletF!.path)).mode & 0o777).toBe(0o755);
    expect(kubeletF!.files).toEqual([
      { from: kubeletF!.path, to: "/usr/local/bin/kubelet", mode: 0o755 },
    ]);
    expect(kubectlF!.files.map((f) => f.to)).toEqual(["/usr/local/bin/kubectl"]);
    expect(crictlF!.files.map((f) => [f.to, f.mode])).toEqual([["/usr/local/bin/crictl", 0o755]]);
    expect(cniF!.files.map((f) => [f.to, f.mode])).toEqual([
      ["/opt/cni/bin/LICENSE", 0o644],
      ["/opt/cni/bin/bridge", 0o755],
      ["/opt/cni/bin/host-local", 0o755],
      ["/opt/cni/bin/loopback", 0o755],
      ["/opt/cni/bin/portmap", 0o755],
    ]);
    // The archives' files are what tar extracted: the bridge plugin is an ELF executable.
    const bridge = await readFile(cniF!.files[1]!.from);
    expect(bridge.subarray(0, 4).toString("latin1")).toBe("\x7fELF");
    // GitHub-style downloads went through the redirect to the object store.
    expect(server.requests).toContain(`/objects/${encodeURIComponent(pathOf(artifacts[2]!.url))}`);
  });

  it("uses @actions/tool-cache's layout: tc.find sees the entries", async () => {
    const { opts } = options();
    const [a] = releaseArtifacts("v1.35.2", "x64", server.sources);
    const f = await fetchArtifact(a!, opts);
    const saved = process.env.RUNNER_TOOL_CACHE;
    process.env.RUNNER_TOOL_CACHE = opts.cacheDir;
    try {
      const tc = await import("@actions/tool-cache");
      expect(tc.find("kubeforge-kubelet", "1.35.2", "amd64")).toBe(dirname(f.path));
      expect(tc.find("kubeforge-kubelet", "v1.35.2", "amd64")).toBe(dirname(f.path));
    } finally {
      if (saved === undefined) delete process.env.RUNNER_TOOL_CACHE;
      else process.env.RUNNER_TOOL_CACHE = saved;
    }
  });

  it("reuses a verified cache entry without any request", async () => {
    const { opts, lines } = options();
    const artifacts = releaseArtifacts("v1.35.4", "x64", server.sources);
    const first = await Promise.all(artifacts.map((a) => fetchArtifact(a, opts)));
    const before = server.requests.length;
    const second = await Promise.all(artifacts.map((a) => fetchArtifact(a, opts)));
    expect(server.requests.length).toBe(before);
    expect(second).toEqual(first);
    expect(lines.filter((l) => l.startsWith("using cached"))).toHaveLength(4);
  });

  it("shares one download between concurrent fetches of the same artifact", async () => {
    const { opts } = options();
    const a = kubelet("v1.35.5");
    const all = await Promise.all([1, 2, 3].map(() => fetchArtifact(a, opts)));
    expect(new Set(all.map((f) => f.path)).size).toBe(1);
    expect(server.hits(pathOf(a.url))).toBe(1);
  });

  it("discards a corrupt cache entry and downloads it again", async () => {
    const { opts, lines } = options();
    const [, , , cni] = releaseArtifacts("v1.35.6", "x64", server.sources);
    const f = await fetchArtifact(cni!, opts);
    const bridge = f.files.find((x) => x.to.endsWith("/bridge"))!.from;
    const good = await readFile(bridge);
    await writeFile(bridge, "corrupted");
    const hits = server.hits(pathOf(cni!.url));

    const again = await fetchArtifact(cni!, opts);
    expect(server.hits(pathOf(cni!.url))).toBe(hits + 1);
    expect(await readFile(again.files.find((x) => x.to.endsWith("/bridge"))!.from)).toEqual(good);
    expect(lines.join("\n")).toMatch(
      /is corrupt \(bridge: sha256 [0-9a-f]{64}, expected [0-9a-f]{64}\); fetching it again/,
    );
  });

  it("re-downloads an entry whose .complete marker is missing (an interrupted placement)", async () => {
    const { opts, lines } = options();
    const a = kubelet("v1.35.7");
    const f = await fetchArtifact(a, opts);
    await rm(`${dirname(f.path)}.complete`);
    await fetchArtifact(a, opts);
    expect(server.hits(pathOf(a.url))).toBe(2);
    expect(lines.join("\n")).toMatch(/is incomplete; fetching it again/);
  });

  it("fetches arm64 artifacts as arm64 ELF executables, cached apart from amd64", async () => {
    const { opts } = options();
    const [amd] = releaseArtifacts("v1.35.2", "x64", server.sources);
    const [arm] = releaseArtifacts("v1.35.2", "arm64", server.sources);
    const [fa, fb] = [await fetchArtifact(amd!, opts), await fetchArtifact(arm!, opts)];
    expect(fa.arch).toBe("amd64");
    expect(fb.arch).toBe("arm64");
    expect(dirname(fb.path)).toBe(join(opts.cacheDir, "kubeforge-kubelet", "1.35.2", "arm64"));
    expect((await readFile(fb.path)).readUInt16LE(18)).toBe(183);
  });
});

describe("fetchArtifact faults: one sentence naming the URL, nothing left in the cache", () => {
  let version = 10;
  /** A kubelet of its own version (no cache or fault interplay between cases). */
  function fresh(): Artifact {
    return kubelet(`v1.35.${++version}`);
  }

  async function failing(a: Artifact, extra: Partial<FetchOptions> = {}): Promise<Error> {
    const { opts } = options(extra);
    const e = await fetchArtifact(a, opts).then(
      () => undefined,
      (err: unknown) => err as Error,
    );
    expect(e, "the fetch should have failed").toBeInstanceOf(Error);
    expect(e!.message.split(/\.\s/)).toHaveLength(1); // one sentence
    expect(await filesUnder(opts.cacheDir)).toEqual([]);
    return e!;
  }

  it("a tampered checksum: both digests, artifact and checksum URLs", async () => {
    const a = fresh();
    server.fault(pathOf(a.url), "tampered-checksum");
    const e = await failing(a);
    const real = sha256(await server.payload(pathOf(a.url)));
    const published = (await server.payload(`${pathOf(a.url)}.sha256`)).toString().trim();
    expect(published).not.toBe(real);
    expect(e.message).toBe(
      `${a.url} does not match its published checksum ${a.checksumUrl}: expected sha256 ${published}, got ${real}`,
    );
    expect(server.hits(pathOf(a.url))).toBe(1); // a mismatch is not retried
  });

  it("an HTML error page served with status 200", async () => {
    const a = fresh();
    server.fault(pathOf(a.url), "html");
    const e = await failing(a);
    expect(e.message).toBe(
      `${a.url} is an HTML page, not the kubelet ${a.version} binary (HTTP 200, Content-Type text/html; charset=utf-8)`,
    );
  });

  it("an HTML page instead of the checksum file", async () => {
    const a = fresh();
    server.fault(`${pathOf(a.url)}.sha256`, "html");
    const e = await failing(a);
    expect(e.message).toBe(`checksum file ${a.checksumUrl} is an HTML page, not a checksum`);
    expect(server.hits(pathOf(a.url))).toBe(0);
  });

  it("404: no retry", async () => {
    const a = fresh();
    server.fault(pathOf(a.url), "not-found");
    const e = await failing(a, { retries: 3 });
    expect(e.message).toBe(`downloading ${a.url} failed: HTTP 404 Not Found`);
    expect(server.hits(pathOf(a.url))).toBe(1);
  });

  it("500 every time: retried, then the last status", async () => {
    const a = fresh();
    server.fault(pathOf(a.url), "error-always");
    const e = await failing(a, { retries: 2 });
    expect(e.message).toBe(
      `downloading ${a.url} failed after 3 attempts: HTTP 500 Internal Server Error`,
    );
    expect(server.hits(pathOf(a.url))).toBe(3);
  });

  it("a body cut short is retried, then reported as truncated", async () => {
    const a = fresh();
    server.fault(pathOf(a.url), "truncated");
    const e = await failing(a, { retries: 1 });
    expect(e.message).toMatch(
      new RegExp(
        `^downloading ${a.url.replace(/\./g, "\\.")} failed after 2 attempts: the body was truncated \\(\\d+ of \\d+ bytes; the connection closed\\)$`,
      ),
    );
    expect(server.hits(pathOf(a.url))).toBe(2);
  });

  it("a server that never answers: the timeout", async () => {
    const a = fresh();
    server.fault(pathOf(a.url), "hang");
    // Long enough for the answered .sha256 request on a loaded machine; the kubelet's hangs.
    const e = await failing(a, { retries: 0, timeoutMs: 3000 });
    expect(e.message).toBe(`downloading ${a.url} failed: no data for 3000 ms`);
  });

  it("a stalled download ends at once when its signal aborts, and is not retried", async () => {
    const a = fresh();
    server.fault(pathOf(a.url), "hang");
    const cancel = new AbortController();
    const reason = new Error("interrupted by SIGINT");
    // The server holds the request; the idle timeout (60 s) is far away.
    const waiting = failing(a, { retries: 3, signal: cancel.signal });
    await expect.poll(() => server.hits(pathOf(a.url)), { timeout: 10_000 }).toBe(1);
    const cancelledAt = Date.now();
    cancel.abort(reason);
    const e = await waiting;
    expect(Date.now() - cancelledAt).toBeLessThan(2_000);
    expect(e.message).toContain(a.url);
    expect(e.message).toMatch(/was stopped: interrupted by SIGINT/);
    expect(server.hits(pathOf(a.url))).toBe(1);
  });

  it("endless redirects", async () => {
    const a = fresh();
    server.fault(pathOf(a.url), "redirect-loop");
    const e = await failing(a);
    expect(e.message).toBe(`downloading ${a.url} failed: more than 10 redirects`);
  });

  it("a binary for another architecture than the one asked for", async () => {
    const a = fresh();
    const arm = kubelet(a.version, "arm64");
    const wrong: Artifact = { ...a, url: arm.url, checksumUrl: arm.checksumUrl };
    const e = await failing(wrong);
    expect(e.message).toBe(
      `${arm.url} is an ELF executable for arm64, not amd64, not the kubelet ${a.version} binary (HTTP 200, Content-Type application/octet-stream)`,
    );
  });

  it("a server whose certificate is not trusted (no CA given)", async () => {
    const a = fresh();
    const { opts } = options();
    const { ca: _ca, ...untrusted } = opts;
    const e = await fetchArtifact(a, untrusted).then(
      () => undefined,
      (err: unknown) => err as Error,
    );
    expect(e?.message).toMatch(
      new RegExp(`^downloading ${a.checksumUrl.replace(/\./g, "\\.")} failed: .*certificate`),
    );
    expect(await filesUnder(opts.cacheDir)).toEqual([]);
  });

  it.each<[Fault, number]>([
    ["error-once", 2],
    ["redirect", 1],
  ])("recovers from %s", async (fault, hits) => {
    const a = fresh();
    server.fault(pathOf(a.url), fault);
    const { opts } = options();
    const f = await fetchArtifact(a, opts);
    expect(f.sha256).toBe(sha256(await server.payload(pathOf(a.url))));
    expect(server.hits(pathOf(a.url))).toBe(hits);
  });
});

describe("fetchKubeletOverride", () => {
  let trueCopy: string;
  let trueSha: string;
  beforeAll(async () => {
    trueCopy = join(scratch, "my-kubelet");
    await copyFile("/bin/true", trueCopy);
    trueSha = sha256(await readFile(trueCopy));
  });

  it("takes a runner path, reports its sha256 when not pinned, installs as /usr/local/bin/kubelet", async () => {
    const { opts, lines } = options();
    const f = await fetchKubeletOverride(trueCopy, opts);
    expect(f).toMatchObject({ name: "kubelet", version: "custom", arch: "amd64", sha256: trueSha });
    expect(f.source).toBe(trueCopy);
    expect(f.files).toEqual([{ from: f.path, to: "/usr/local/bin/kubelet", mode: 0o755 }]);
    expect(await readFile(f.path)).toEqual(await readFile(trueCopy));
    expect(lines).toContain(
      `custom kubelet ${trueCopy}: sha256 ${trueSha} (append #sha256=${trueSha} to pin it)`,
    );
  });

  it("checks a path's pin, and says nothing about pinning when pinned", async () => {
    const { opts, lines } = options();
    const f = await fetchKubeletOverride(`${trueCopy}#sha256=${trueSha.toUpperCase()}`, opts);
    expect(f.sha256).toBe(trueSha);
    expect(lines.join("\n")).not.toMatch(/to pin it/);

    const { opts: o2 } = options();
    const wrong = "ab".repeat(32);
    await expect(fetchKubeletOverride(`${trueCopy}#sha256=${wrong}`, o2)).rejects.toThrow(
      `the custom kubelet ${trueCopy} does not match its pin: expected sha256 ${wrong}, got ${trueSha}`,
    );
    expect(await filesUnder(o2.cacheDir)).toEqual([]);
  });

  it.each([
    ["a missing file", () => join(scratch, "nope"), /the custom kubelet .*nope does not exist/],
    ["a folder", () => scratch, /is not a file/],
    ["a shell script", () => join(scratch, "script.sh"), /script\.sh is not an ELF executable/],
    ["a malformed pin", () => `${trueCopy}#sha256=abc`, /has a pin that is not a SHA-256/],
    [
      "another scheme",
      () => "ftp://example.test/kubelet",
      /is neither a path nor an http\(s\) URL/,
    ],
  ])("refuses %s", async (_what, source, message) => {
    await writeFile(join(scratch, "script.sh"), "#!/bin/sh\nexit 0\n", { mode: 0o755 });
    const { opts } = options();
    await expect(fetchKubeletOverride(source(), opts)).rejects.toThrow(message);
  });

  it("downloads a URL every time when not pinned, and reports the sha256", async () => {
    const body = await server.elf("amd64", "custom-unpinned");
    server.put("/custom/unpinned/kubelet", body);
    const url = `${server.url}/custom/unpinned/kubelet`;
    const { opts, lines } = options();
    const f = await fetchKubeletOverride(url, opts);
    expect(f.sha256).toBe(sha256(body));
    expect(f.source).toBe(url);
    expect(await readFile(f.path)).toEqual(body);
    expect(lines).toContain(
      `custom kubelet ${url}: sha256 ${sha256(body)} (append #sha256=${sha256(body)} to pin it)`,
    );
    await fetchKubeletOverride(url, opts);
    expect(server.hits("/custom/unpinned/kubelet")).toBe(2);
  });

  it("downloads a pinned URL once, then serves it from the cache", async () => {
    const body = await server.elf("arm64", "custom-pinned");
    server.put("/custom/pinned/kubelet", body);
    const url = `${server.url}/custom/pinned/kubelet`;
    const { opts } = options();
    const first = await fetchKubeletOverride(`${url}#sha256=${sha256(body)}`, opts);
    const second = await fetchKubeletOverride(`${url}#sha256=${sha256(body)}`, opts);
    expect(second).toEqual(first);
    expect(first.arch).toBe("arm64");
    expect(server.hits("/custom/pinned/kubelet")).toBe(1);
  });

  it("refuses a URL that does not match its pin, or is not a kubelet, naming the URL", async () => {
    const body = await server.elf("amd64", "custom-wrong");
    server.put("/custom/wrong/kubelet", body);
    const url = `${server.url}/custom/wrong/kubelet`;
    const pin = "cd".repeat(32);
    const { opts } = options();
    await expect(fetchKubeletOverride(`${url}#sha256=${pin}`, opts)).rejects.toThrow(
      `the custom kubelet ${url} does not match its pin: expected sha256 ${pin}, got ${sha256(body)}`,
    );
    server.put("/custom/page/kubelet", Buffer.from("<!doctype html><html>login</html>"));
    await expect(fetchKubeletOverride(`${server.url}/custom/page/kubelet`, opts)).rejects.toThrow(
      `the custom kubelet ${server.url}/custom/page/kubelet is an HTML page`,
    );
    await expect(fetchKubeletOverride(`${server.url}/custom/missing`, opts)).rejects.toThrow(
      `downloading ${server.url}/custom/missing failed: HTTP 404 Not Found`,
    );
    expect(await filesUnder(opts.cacheDir)).toEqual([]);
  });
});
