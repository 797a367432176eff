import { execFileSync } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import type { TLSSocket } from "node:tls";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toYAML } from "../../../src/config/yaml.js";
import { kubeClientFromKubeConfig } from "../../../src/kube/client.js";
import {
  discoverFromFile,
  discoverTLSBootstrapConfig,
  type FileDiscoveryOptions,
} from "../../../src/kube/discovery/index.js";
import { clusterCAData, clusterOf } from "../../../src/kubeconfig/bootstrap.js";
import { renderKubeConfig } from "../../../src/kubeconfig/build.js";
import type { KubeConfig } from "../../../src/kubeconfig/types.js";
import type { Route } from "../../../src/remote/route.js";
import { TOKEN, startDiscoveryCluster, type DiscoveryCluster } from "./sim-cluster.js";

// File and HTTPS discovery against the simulated control plane: files on disk (a path, a
// file:// URL), a local HTTPS server whose CA is handed over as an extra trusted CA, and what
// must be refused (an untrusted server, an HTML page, an error status).

let c: DiscoveryCluster;
let web: { server: Server; base: string; caPEM: string };

/** A CA and a serving certificate for 127.0.0.1, made with the openssl CLI. */
function webPKI(dir: string): { caPEM: string; cert: string; key: string } {
  const run = (args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  run([
    "req",
    "-x509",
    ...ec,
    "-keyout",
    "ca.key",
    "-out",
    "ca.crt",
    "-subj",
    "/CN=web-ca",
    "-days",
    "1",
  ]);
  run(["req", ...ec, "-keyout", "web.key", "-out", "web.csr", "-subj", "/CN=127.0.0.1"]);
  execFileSync("sh", ["-c", "printf 'subjectAltName=IP:127.0.0.1\\n' > ext.cnf"], { cwd: dir });
  run([
    "x509",
    "-req",
    "-in",
    "web.csr",
    "-CA",
    "ca.crt",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    "web.crt",
    "-days",
    "1",
    "-extfile",
    "ext.cnf",
  ]);
  return {
    caPEM: execFileSync("cat", [join(dir, "ca.crt")], { encoding: "utf8" }),
    cert: join(dir, "web.crt"),
    key: join(dir, "web.key"),
  };
}

/** The cluster-info shaped kubeconfig of the test cluster, optionally with a user. */
function discoveryKubeconfig(
  opts: { ca?: string | false; caFile?: string; token?: string } = {},
): string {
  const cluster: Record<string, unknown> = { server: c.server };
  if (opts.caFile) cluster["certificate-authority"] = opts.caFile;
  else if (opts.ca !== false) {
    cluster["certificate-authority-data"] = Buffer.from(opts.ca ?? c.caPEM).toString("base64");
  }
  if (!opts.token) {
    return toYAML({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "", cluster }],
      contexts: null,
      "current-context": "",
      users: null,
    });
  }
  return toYAML({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "kubernetes", cluster }],
    contexts: [{ name: "joiner@kubernetes", context: { cluster: "kubernetes", user: "joiner" } }],
    "current-context": "joiner@kubernetes",
    users: [{ name: "joiner", user: { token: opts.token } }],
  });
}

const pages: Record<string, { status: number; type: string; body: string; location?: string }> = {};
/** What reached the web server: path, Authorization header, whether a client certificate came. */
const seen: { url: string; authorization?: string; clientCert: boolean }[] = [];

beforeAll(async () => {
  c = await startDiscoveryCluster();
  const dir = join(c.root, "web");
  await mkdir(dir);
  const pki = webPKI(dir);
  const server = createServer(
    {
      cert: await readFile(pki.cert),
      key: await readFile(pki.key),
      // Asks for a client certificate (never required): the test sees whether one is sent.
      requestCert: true,
      rejectUnauthorized: false,
    },
    (req, res) => {
      const peer = (req.socket as TLSSocket).getPeerCertificate();
      seen.push({
        url: req.url ?? "",
        ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
        clientCert: peer !== null && Object.keys(peer).length > 0,
      });
      const page = pages[req.url ?? ""] ?? {
        status: 404,
        type: "text/plain",
        body: "404 page not found\n",
      };
      res.writeHead(page.status, {
        "Content-Type": page.type,
        ...(page.location ? { Location: page.location } : {}),
      });
      res.end(page.body);
    },
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  web = {
    server,
    base: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    caPEM: pki.caPEM,
  };
}, 60_000);

afterAll(async () => {
  await new Promise((resolve) => web?.server.close(resolve));
  await c?.stop();
});

function options(over: Partial<FileDiscoveryOptions> = {}) {
  const logs: string[] = [];
  const warnings: string[] = [];
  const opts: FileDiscoveryOptions = {
    readFile: (p) => readFile(p),
    log: (l) => logs.push(l),
    warn: (l) => warnings.push(l),
    timeoutMs: 10_000,
    intervalMs: 100,
    ...over,
  };
  return { opts, logs, warnings };
}

async function failure(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error("expected discovery to fail");
}

async function authenticates(config: KubeConfig): Promise<void> {
  const client = await kubeClientFromKubeConfig(renderKubeConfig(config, { preferences: false }), {
    description: "bootstrap-kubelet.conf",
  });
  await expect(client.list("certificates.k8s.io/v1", "CertificateSigningRequest")).resolves.toEqual(
    [],
  );
}

describe("file discovery against the simulated control plane", () => {
  it("reads a path, checks TLS with its CA through cluster-info, and bootstraps with the TLS bootstrap token", async () => {
    const path = join(c.root, "discovery.conf");
    await writeFile(path, discoveryKubeconfig());
    const { opts, logs } = options();
    const config = await discoverFromFile(path, opts);
    expect(clusterOf(config)!.cluster.server).toBe(c.server);
    expect(clusterCAData(clusterOf(config)!.cluster).toString()).toBe(c.caPEM);
    expect(logs).toContain(
      `[discovery] Created cluster-info discovery client, requesting info from "${c.server}"`,
    );

    const { tlsBootstrap, method } = await discoverTLSBootstrapConfig(
      { file: { kubeConfigPath: path }, tlsBootstrapToken: TOKEN },
      { ...opts, readFile: (p) => readFile(p) },
    );
    expect(method).toBe("file");
    expect(tlsBootstrap.users[0]!.user.token).toBe(TOKEN);
    await authenticates(tlsBootstrap);
  });

  it("reads a file:// URL whose kubeconfig names its CA by a relative path and carries a token", async () => {
    const dir = join(c.root, "join");
    await mkdir(join(dir, "pki"), { recursive: true });
    await writeFile(join(dir, "pki/ca.crt"), c.caPEM);
    const path = join(dir, "discovery with space.conf");
    await writeFile(path, discoveryKubeconfig({ caFile: "pki/ca.crt", token: TOKEN }));
    const url = pathToFileURL(path).href;
    expect(url).toContain("%20");
    const { opts } = options();
    const config = await discoverFromFile(url, opts);
    expect(clusterOf(config)!.cluster["certificate-authority-data"]).toBe(
      Buffer.from(c.caPEM).toString("base64"),
    );
    expect(clusterOf(config)!.cluster["certificate-authority"]).toBeUndefined();

    // No TLS bootstrap token: the file's own credentials are bootstrap-kubelet.conf's.
    const { tlsBootstrap } = await discoverTLSBootstrapConfig(
      { file: { kubeConfigPath: url } },
      opts,
    );
    expect(tlsBootstrap).toEqual(config);
    await authenticates(tlsBootstrap);
  });

  it("goes on with the file when cluster-info answers 403, with a warning", async () => {
    const path = join(c.root, "forbidden.conf");
    await writeFile(path, discoveryKubeconfig());
    c.api.faults.inject({
      method: "GET",
      pathPrefix: "/api/v1/namespaces/kube-public/configmaps/cluster-info",
      times: 1,
      respond: { code: 403, message: "forbidden by the test" },
    });
    const { opts, warnings } = options();
    const config = await discoverFromFile(path, opts);
    expect(c.api.faults.unused()).toEqual([]);
    expect(clusterOf(config)!.cluster.server).toBe(c.server);
    expect(warnings[0]).toMatch(/Could not access the cluster-info ConfigMap/);
  });

  it.each([
    ["no CA (the host's store does not trust the cluster CA)", { ca: false } as const],
    ["another CA", { ca: "OTHER" } as const],
  ])("fails after the timeout with %s", async (_name, spec) => {
    const path = join(c.root, `bad-${spec.ca}.conf`);
    const ca = spec.ca === "OTHER" ? web.caPEM : false;
    await writeFile(path, discoveryKubeconfig({ ca }));
    const { opts } = options({ timeoutMs: 600, intervalMs: 200 });
    const error = await failure(discoverFromFile(path, opts));
    expect(error.message).toMatch(
      new RegExp(
        `^could not read the cluster-info ConfigMap from ${c.server} with the discovery file ${path} within 600ms: .*certificate`,
      ),
    );
  });
});

describe("HTTPS discovery", () => {
  it("downloads the kubeconfig over TLS checked with the given CA, following a redirect", async () => {
    pages["/discovery.conf"] = {
      status: 200,
      type: "application/yaml",
      body: discoveryKubeconfig(),
    };
    pages["/latest"] = { status: 302, type: "text/plain", body: "", location: "/discovery.conf" };
    const { opts } = options({ extraCACerts: web.caPEM });
    const config = await discoverFromFile(`${web.base}/latest`, opts);
    expect(clusterOf(config)!.cluster.server).toBe(c.server);
    expect(clusterCAData(clusterOf(config)!.cluster).toString()).toBe(c.caPEM);
  });

  it.each([
    [
      "a server the host's store does not trust",
      "/discovery.conf",
      false,
      /^cannot download the discovery file https:\/\/127\.0\.0\.1:\d+\/discovery\.conf: .*(self-signed|unable to verify|certificate)/,
    ],
    [
      "an error status",
      "/missing.conf",
      true,
      /^cannot download the discovery file https:\/\/127\.0\.0\.1:\d+\/missing\.conf: the server answered 404 Not Found$/,
    ],
    [
      "an HTML page",
      "/login.html",
      true,
      /^the discovery file https:\/\/127\.0\.0\.1:\d+\/login\.html is not a kubeconfig: the server sent an HTML page$/,
    ],
    [
      "an HTML page sent as text",
      "/login.txt",
      true,
      /^the discovery file https:\/\/127\.0\.0\.1:\d+\/login\.txt is not a kubeconfig: it looks like an HTML or XML page$/,
    ],
  ])("refuses %s, naming the URL", async (_name, path, trusted, message) => {
    pages["/discovery.conf"] = {
      status: 200,
      type: "application/yaml",
      body: discoveryKubeconfig(),
    };
    const html = "<!DOCTYPE html>\n<html><body>Sign in</body></html>\n";
    pages["/login.html"] = { status: 200, type: "text/html; charset=utf-8", body: html };
    pages["/login.txt"] = { status: 200, type: "text/plain", body: html };
    const { opts } = options(trusted ? { extraCACerts: web.caPEM } : {});
    expect((await failure(discoverFromFile(`${web.base}${path}`, opts))).message).toMatch(message);
  });

  it("follows the node's route to the URL's host, the certificate checked against that host", async () => {
    pages["/discovery.conf"] = {
      status: 200,
      type: "application/yaml",
      body: discoveryKubeconfig(),
    };
    const webPort = Number(new URL(web.base).port);
    const asked: string[] = [];
    // The node reaches 127.0.0.1:1 and 192.0.2.1 as this web server; anything else directly.
    const route: Route = (host, port) => {
      asked.push(`${host}:${port}`);
      return Promise.resolve(
        port === 1 || host === "192.0.2.1" ? { host: "127.0.0.1", port: webPort } : { host, port },
      );
    };
    const { opts } = options({ extraCACerts: web.caPEM, route });
    const config = await discoverFromFile("https://127.0.0.1:1/discovery.conf", opts);
    expect(clusterOf(config)!.cluster.server).toBe(c.server);
    expect(asked[0]).toBe("127.0.0.1:1");
    // The cluster-info read that validates the file goes along the same route.
    expect(asked).toContain(`${new URL(c.server).hostname}:${new URL(c.server).port}`);
    // The web server's certificate names 127.0.0.1, not 192.0.2.1.
    expect(
      (await failure(discoverFromFile("https://192.0.2.1/discovery.conf", opts))).message,
    ).toMatch(
      /^cannot download the discovery file https:\/\/192\.0\.2\.1\/discovery\.conf: .*192\.0\.2\.1/,
    );
  });

  it("refuses a plain http URL before any request", async () => {
    const { opts } = options();
    await expect(discoverFromFile(`http://127.0.0.1:1/discovery.conf`, opts)).rejects.toThrow(
      /only https URLs and file paths/,
    );
  });
});

describe("HTTPS discovery from a hostile server", () => {
  it("takes only the cluster's server and CA: no local file is sent, no command runs", async () => {
    const dir = join(c.root, "hostile");
    await mkdir(dir, { recursive: true });
    // A secret of the joining machine's, and a key pair of its own (the web server's, here).
    const secretFile = join(dir, "ci-secret");
    await writeFile(secretFile, "the-ci-deploy-token\n");
    const marker = join(dir, "exec-ran");
    const kubeconfig = (user: Record<string, unknown>) =>
      toYAML({
        apiVersion: "v1",
        kind: "Config",
        // The API server is the discovery server itself: it sees what a client sends.
        clusters: [
          {
            name: "c",
            cluster: {
              server: web.base,
              "certificate-authority-data": Buffer.from(web.caPEM).toString("base64"),
              "insecure-skip-tls-verify": false,
            },
          },
        ],
        contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
        "current-context": "x",
        users: [{ name: "u", user }],
      });
    pages["/token-file.conf"] = {
      status: 200,
      type: "application/yaml",
      body: kubeconfig({
        tokenFile: secretFile,
        "client-certificate": join(c.root, "web", "web.crt"),
        "client-key": join(c.root, "web", "web.key"),
      }),
    };
    pages["/exec.conf"] = {
      status: 200,
      type: "application/yaml",
      body: kubeconfig({
        exec: {
          apiVersion: "client.authentication.k8s.io/v1",
          command: "sh",
          args: [
            "-c",
            `touch ${marker}; echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"from-exec"}}'`,
          ],
          interactiveMode: "Never",
        },
      }),
    };
    pages["/auth-provider.conf"] = {
      status: 200,
      type: "application/yaml",
      body: kubeconfig({ "auth-provider": { name: "oidc", config: { "id-token": "x" } } }),
    };
    // cluster-info is closed to this client: discovery goes on with the file (kubeadm's rule).
    pages["/api/v1/namespaces/kube-public/configmaps/cluster-info"] = {
      status: 403,
      type: "application/json",
      body: JSON.stringify({
        kind: "Status",
        apiVersion: "v1",
        status: "Failure",
        reason: "Forbidden",
        code: 403,
      }),
    };
    for (const [page, fields] of [
      ["/token-file.conf", ["tokenFile", "client-certificate", "client-key"]],
      ["/exec.conf", ["exec"]],
      ["/auth-provider.conf", ["auth-provider"]],
    ] as const) {
      seen.length = 0;
      const { opts, warnings } = options({ extraCACerts: web.caPEM });
      const config = await discoverFromFile(`${web.base}${page}`, opts);
      const asked = seen.filter((r) => r.url.includes("cluster-info"));
      expect(asked.length, page).toBeGreaterThan(0);
      expect(asked.filter((r) => r.authorization !== undefined || r.clientCert)).toEqual([]);
      expect(config.users).toEqual([]);
      expect(clusterOf(config)!.cluster).toEqual({
        server: web.base,
        "certificate-authority-data": Buffer.from(web.caPEM).toString("base64"),
      });
      for (const field of [
        "clusters.insecure-skip-tls-verify",
        ...fields.map((f) => `users["u"].${f}`),
      ]) {
        expect(warnings.join("\n"), page).toContain(field);
      }
      // Without credentials of its own the join needs the TLS bootstrap token, and says so.
      await expect(
        discoverTLSBootstrapConfig({ file: { kubeConfigPath: `${web.base}${page}` } }, opts),
      ).rejects.toThrow(/could not find authentication credentials .*--tls-bootstrap-token/);
    }
    await expect(readFile(marker)).rejects.toThrow(/ENOENT/);
  });

  it("refuses a downloaded file that names a CA file on this machine", async () => {
    pages["/ca-file.conf"] = {
      status: 200,
      type: "application/yaml",
      body: discoveryKubeconfig({ caFile: "/etc/kubernetes/pki/ca.crt" }),
    };
    const { opts } = options({ extraCACerts: web.caPEM });
    expect((await failure(discoverFromFile(`${web.base}/ca-file.conf`, opts))).message).toMatch(
      /^the discovery file https:\/\/127\.0\.0\.1:\d+\/ca-file\.conf names a file on this machine as its CA \(certificate-authority\); a downloaded discovery file must carry its CA as certificate-authority-data$/,
    );
  });
});
