import { createHash } from "node:crypto";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { downloadToFile } from "../../../src/node/artifacts/download.js";
import { fetchArtifact, type FetchOptions } from "../../../src/node/artifacts/fetch.js";
import type { Artifact } from "../../../src/node/artifacts/types.js";
import { startConnectProxy, type ConnectProxy } from "../../support/connect-proxy.js";
import { claimLocalAddress, type LocalAddress } from "../../support/local-address.js";
import { startReleaseServer, type ReleaseServer } from "../../support/release-server.js";

// How downloads reach the release servers (node/artifacts/download.ts over @actions/http-client):
// through the proxy HTTPS_PROXY names, directly for the hosts NO_PROXY lists, with a progress
// line while a long body downloads, and stopped at once when cancelled. The release server
// (test/support/release-server.ts) listens on an ordinary address of this machine (loopback is
// never proxied) and is also named releases.kubeforge.test, a name only the test proxy
// (test/support/connect-proxy.ts) resolves: a download of that name that succeeds went through it.

const NAME = "releases.kubeforge.test";
const PROXY_VARS = [
  "HTTPS_PROXY",
  "https_proxy",
  "HTTP_PROXY",
  "http_proxy",
  "NO_PROXY",
  "no_proxy",
];

let local: LocalAddress;
let server: ReleaseServer;
let proxy: ConnectProxy;
let scratch: string;
/** https://<address>:<port>: the same server by its address. */
let byAddress: string;
const saved = new Map<string, string | undefined>();

const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const pathOf = (url: string) => new URL(url).pathname;

beforeAll(async () => {
  local = await claimLocalAddress();
  server = await startReleaseServer({ address: local.address, name: NAME });
  proxy = await startConnectProxy({ hosts: { [NAME]: local.address } });
  scratch = await mkdtemp(join(tmpdir(), "kubeforge-artifacts-download-"));
  byAddress = `https://${local.address}:${new URL(server.url).port}`;
});

afterAll(async () => {
  await proxy?.close();
  await server?.close();
  await local?.release();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

// The proxy settings of this process are each test's own.
beforeEach(() => {
  for (const v of PROXY_VARS) {
    saved.set(v, process.env[v]);
    delete process.env[v];
  }
});
afterEach(() => {
  for (const [v, value] of saved) {
    if (value === undefined) delete process.env[v];
    else process.env[v] = value;
  }
});

let count = 0;
function options(extra: Partial<FetchOptions> = {}) {
  const lines: string[] = [];
  return {
    lines,
    opts: {
      cacheDir: join(scratch, `cache-${++count}`),
      ca: server.ca,
      retries: 0,
      log: (l: string) => lines.push(l),
      ...extra,
    },
  };
}

/** A kubelet of its own version, on the server as `base` names it. */
function kubelet(base: string, patch: number): Artifact {
  const version = `v1.35.${patch}`;
  const url = `${base}/dl/release/${version}/bin/linux/amd64/kubelet`;
  return {
    name: "kubelet",
    version,
    arch: "amd64",
    url,
    checksumUrl: `${url}.sha256`,
    format: "binary",
  };
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => !e.isDirectory()).map((e) => join(e.parentPath, e.name));
}

describe("downloads and proxies", () => {
  it("go through HTTPS_PROXY, with its credentials, to a host only the proxy resolves", async () => {
    const a = kubelet(server.url, 1);
    const { opts } = options();
    // Without the proxy the name does not resolve: the download fails, naming the URL.
    await expect(fetchArtifact(a, opts)).rejects.toThrow(`downloading ${a.checksumUrl} failed`);

    process.env.HTTPS_PROXY = proxy.url;
    const before = proxy.connects.length;
    const f = await fetchArtifact(a, options().opts);
    expect(f.sha256).toBe(sha256(await server.payload(pathOf(a.url))));
    const port = new URL(server.url).port;
    // The checksum, then the binary: each through a tunnel to the name, not to an address.
    expect(proxy.connects.slice(before)).toEqual([`${NAME}:${port}`, `${NAME}:${port}`]);
  });

  it("name the URL and the proxy's answer when the proxy refuses", async () => {
    const wrong = new URL(proxy.url);
    wrong.password = "not-the-password";
    process.env.HTTPS_PROXY = wrong.href;
    const a = kubelet(server.url, 2);
    const { opts } = options();
    const e = await fetchArtifact(a, opts).then(
      () => undefined,
      (err: unknown) => err as Error,
    );
    expect(e?.message).toMatch(
      new RegExp(`^downloading ${a.checksumUrl.replace(/\./g, "\\.")} failed: .*407`),
    );
    expect(await filesUnder(opts.cacheDir)).toEqual([]);
  });

  it("reach the hosts NO_PROXY lists directly, and only those", async () => {
    process.env.HTTPS_PROXY = proxy.url;
    const port = new URL(server.url).port;

    // An ordinary address is proxied like any host...
    const viaProxy = kubelet(byAddress, 3);
    let before = proxy.connects.length;
    await fetchArtifact(viaProxy, options().opts);
    expect(proxy.connects.slice(before)).toEqual([
      `${local.address}:${port}`,
      `${local.address}:${port}`,
    ]);

    // ...unless NO_PROXY lists it (among other entries, as the runner's often are).
    process.env.NO_PROXY = `example.com, ${local.address}`;
    const direct = kubelet(byAddress, 4);
    before = proxy.connects.length;
    const hitsBefore = server.hits(pathOf(direct.url));
    const f = await fetchArtifact(direct, options().opts);
    expect(f.sha256).toBe(sha256(await server.payload(pathOf(direct.url))));
    expect(proxy.connects.slice(before)).toEqual([]);
    expect(server.hits(pathOf(direct.url))).toBe(hitsBefore + 1);

    // A NO_PROXY domain suffix covers the name: it is then looked up directly, where it does not
    // resolve, and the proxy sees nothing.
    process.env.NO_PROXY = ".kubeforge.test";
    const named = kubelet(server.url, 5);
    before = proxy.connects.length;
    await expect(fetchArtifact(named, options().opts)).rejects.toThrow(
      `downloading ${named.checksumUrl} failed`,
    );
    expect(proxy.connects.slice(before)).toEqual([]);
  });
});

describe("long downloads", () => {
  it("print the bytes so far, the total and the rate while the body comes in", async () => {
    const body = await server.elf("amd64", "progress");
    server.put("/custom/progress/kubelet", body);
    server.fault("/custom/progress/kubelet", "slow");
    const url = `${byAddress}/custom/progress/kubelet`;
    const lines: string[] = [];
    const dest = join(scratch, "progress");
    const got = await downloadToFile(url, dest, {
      ca: server.ca,
      log: (l) => lines.push(l),
      progressIntervalMs: 300,
    });
    expect(got.sha256).toBe(sha256(body));
    expect(await readFile(dest)).toEqual(body);
    const progress = lines.filter((l) => l.startsWith(`downloading ${url}: `));
    expect(progress.length, lines.join("\n")).toBeGreaterThanOrEqual(2);
    const total = `${(body.length / 1024).toFixed(1)} KB`;
    const percents = progress.map((l) => {
      const m = new RegExp(
        `: [\\d.]+ (?:B|KB) of ${total.replace(".", "\\.")} \\((\\d+)%\\), [\\d.]+ (?:B|KB)/s$`,
      ).exec(l);
      expect(m, l).not.toBeNull();
      return Number(m![1]);
    });
    expect([...percents].sort((x, y) => x - y)).toEqual(percents);
    expect(percents[0]).toBeLessThan(100);
  });

  it("stop when cancelled, mid-body or before any answer: not retried, nothing cached", async () => {
    for (const [fault, path] of [
      ["slow", "/custom/cancel-body/kubelet"],
      ["hang", "/custom/cancel-headers/kubelet"],
    ] as const) {
      server.put(path, await server.elf("amd64", path));
      server.fault(path, fault);
      const url = `${byAddress}${path}`;
      const controller = new AbortController();
      const { opts } = options({ retries: 3, signal: controller.signal });
      const download = downloadToFile(url, join(scratch, "cancelled"), opts).then(
        () => undefined,
        (err: unknown) => err as Error,
      );
      // Cancelled once the server has the request (and, for "slow", is sending the body).
      while (server.hits(path) === 0) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 200));
      controller.abort(new Error("the job was cancelled"));
      // Stopped, not finished: the body (1.5 s) had not ended, nor the idle timeout (60 s).
      const e = await download;
      expect(e?.message).toBe(`downloading ${url} was stopped: the job was cancelled`);
      expect(server.hits(path)).toBe(1);
    }
  });

  it("leave nothing in the cache when a fetch is cancelled", async () => {
    const a = kubelet(byAddress, 6);
    server.fault(pathOf(a.url), "slow");
    const controller = new AbortController();
    const { opts } = options({ signal: controller.signal });
    const fetching = fetchArtifact(a, opts);
    // Once the binary (after its checksum) is on its way.
    while (server.hits(pathOf(a.url)) === 0) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 200));
    controller.abort(new Error("interrupted by SIGTERM"));
    await expect(fetching).rejects.toThrow(
      `downloading ${a.url} was stopped: interrupted by SIGTERM`,
    );
    expect(await filesUnder(opts.cacheDir)).toEqual([]);
  });
});
