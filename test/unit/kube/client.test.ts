import { createServer as createNetServer, type Server as NetServer } from "node:net";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { kubeClientFromKubeConfig } from "../../../src/kube/client.js";
import {
  ApiError,
  isAlreadyExists,
  isConflict,
  isForbidden,
  isInvalid,
  isNotFound,
  isTransient,
} from "../../../src/kube/errors.js";
import { GET_RETRY_AFTER_MS, isResetOrEOF } from "../../../src/kube/get-retry.js";
import type { KubeClient, KubeObject } from "../../../src/kube/types.js";
import type { Route } from "../../../src/remote/route.js";
import {
  b64,
  FakeAPIServer,
  kubeconfigText,
  makePKI,
  removePKI,
  status,
  type TestPKI,
} from "./fake-apiserver.js";

let pki: TestPKI;
let server: FakeAPIServer;

beforeAll(async () => {
  pki = makePKI();
  server = new FakeAPIServer(pki);
  await server.start();
});

afterAll(async () => {
  await server.stop();
  removePKI(pki);
});

beforeEach(() => {
  server.requests.length = 0;
  server.objects.clear();
  server.hooks = [];
});

function adminKubeconfig(): string {
  return kubeconfigText(
    server.url,
    { "certificate-authority-data": b64(pki.caCert) },
    { "client-certificate-data": b64(pki.clientCert), "client-key-data": b64(pki.clientKey) },
  );
}

function adminClient(): Promise<KubeClient> {
  return kubeClientFromKubeConfig(adminKubeconfig(), { description: "admin.conf" });
}

const configMap = (name: string, data: Record<string, string> = {}): KubeObject => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name, namespace: "kube-system", creationTimestamp: null },
  data,
});

describe("requests", () => {
  it("sends each verb to the Kubernetes path with JSON bodies and the patch content types", async () => {
    const client = await adminClient();
    const created = await client.create(configMap("kubeadm-config", { a: "1" }));
    await client.get({
      apiVersion: "v1",
      kind: "ConfigMap",
      name: "kubeadm-config",
      namespace: "kube-system",
    });
    await client.update({ ...created, data: { a: "2" } });
    const ref = {
      apiVersion: "v1",
      kind: "ConfigMap",
      name: "kubeadm-config",
      namespace: "kube-system",
    };
    await client.patch(ref, { data: { b: "3" } }, "strategic");
    await client.patch(ref, { data: { b: "4" } }, "merge");
    await client.patch(ref, [{ op: "add", path: "/data/c", value: "5" }], "json");
    await client.list("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", {
      labelSelector: "a=b",
      fieldSelector: "metadata.name=x",
    });
    await client.delete(ref);
    const seen = server.requests.map((r) => [r.method, r.path, r.contentType]);
    expect(seen).toEqual([
      ["POST", "/api/v1/namespaces/kube-system/configmaps", "application/json"],
      ["GET", "/api/v1/namespaces/kube-system/configmaps/kubeadm-config", undefined],
      ["PUT", "/api/v1/namespaces/kube-system/configmaps/kubeadm-config", "application/json"],
      [
        "PATCH",
        "/api/v1/namespaces/kube-system/configmaps/kubeadm-config",
        "application/strategic-merge-patch+json",
      ],
      [
        "PATCH",
        "/api/v1/namespaces/kube-system/configmaps/kubeadm-config",
        "application/merge-patch+json",
      ],
      [
        "PATCH",
        "/api/v1/namespaces/kube-system/configmaps/kubeadm-config",
        "application/json-patch+json",
      ],
      ["GET", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", undefined],
      ["DELETE", "/api/v1/namespaces/kube-system/configmaps/kubeadm-config", undefined],
    ]);
    const list = server.requests[6]!;
    expect(list.query.get("labelSelector")).toBe("a=b");
    expect(list.query.get("fieldSelector")).toBe("metadata.name=x");
    // Bodies are the objects as given: creationTimestamp null stays, nothing is added.
    expect(JSON.parse(server.requests[0]!.body)).toEqual(configMap("kubeadm-config", { a: "1" }));
    expect(JSON.parse(server.requests[5]!.body)).toEqual([
      { op: "add", path: "/data/c", value: "5" },
    ]);
  });

  it("returns plain JSON objects, timestamps as strings", async () => {
    server.hooks.push((r) =>
      r.method === "GET"
        ? {
            status: 200,
            body: {
              apiVersion: "v1",
              kind: "Node",
              metadata: {
                name: "cp-1",
                creationTimestamp: "2026-01-02T03:04:05Z",
                labels: { a: "b" },
              },
              spec: {
                taints: [{ key: "k", effect: "NoSchedule", timeAdded: "2026-01-02T03:04:05Z" }],
              },
            },
          }
        : undefined,
    );
    const client = await adminClient();
    const node = await client.get({ apiVersion: "v1", kind: "Node", name: "cp-1" });
    expect(server.requests[0]!.path).toBe("/api/v1/nodes/cp-1");
    expect(node.metadata.creationTimestamp).toBe("2026-01-02T03:04:05Z");
    expect(Object.getPrototypeOf(node)).toBe(Object.prototype);
    expect((node.spec as { taints: { timeAdded: unknown }[] }).taints[0]!.timeAdded).toBe(
      "2026-01-02T03:04:05Z",
    );
  });

  it("fills apiVersion and kind into list items, which the API serves without them", async () => {
    const client = await adminClient();
    await client.create(configMap("one"));
    await client.create(configMap("two"));
    const items = await client.list("v1", "ConfigMap", { namespace: "kube-system" });
    expect(server.requests.at(-1)!.path).toBe("/api/v1/namespaces/kube-system/configmaps");
    expect(items.map((i) => [i.apiVersion, i.kind, i.metadata.name])).toEqual([
      ["v1", "ConfigMap", "one"],
      ["v1", "ConfigMap", "two"],
    ]);
  });

  it("getRaw returns any status without throwing", async () => {
    server.hooks.push((r) =>
      r.path === "/livez" ? { status: 503, body: "[-]etcd failed" } : undefined,
    );
    const client = await adminClient();
    expect(await client.getRaw("/livez")).toEqual({ status: 503, body: "[-]etcd failed" });
    expect(server.requests[0]!.clientCN).toBe("kubernetes-admin");
  });

  it("refuses a namespaced create without a namespace before sending anything", async () => {
    const client = await adminClient();
    const obj = { apiVersion: "v1", kind: "Secret", metadata: { name: "s" } };
    await expect(client.create(obj)).rejects.toThrow('Secret "s" needs a namespace');
    expect(server.requests).toHaveLength(0);
  });
});

describe("credentials", () => {
  it("presents the kubeconfig's client certificate", async () => {
    const client = await adminClient();
    await client.getRaw("/version");
    expect(server.requests[0]!.clientCN).toBe("kubernetes-admin");
    expect(server.requests[0]!.authorization).toBeUndefined();
  });

  it("sends a bootstrap token as a bearer token, and no certificate", async () => {
    const text = kubeconfigText(
      server.url,
      { "certificate-authority-data": b64(pki.caCert) },
      { token: "abcdef.0123456789abcdef" },
    );
    const client = await kubeClientFromKubeConfig(text, { description: "bootstrap-kubelet.conf" });
    await client.getRaw("/version");
    expect(server.requests[0]!.authorization).toBe("Bearer abcdef.0123456789abcdef");
    expect(server.requests[0]!.clientCN).toBeUndefined();
  });

  it("is anonymous without user credentials, and honours insecure-skip-tls-verify", async () => {
    const text = kubeconfigText(server.url, { "insecure-skip-tls-verify": true }, undefined);
    const client = await kubeClientFromKubeConfig(text, { description: "discovery" });
    expect(
      (await client.getRaw("/api/v1/namespaces/kube-public/configmaps/cluster-info")).status,
    ).toBe(404);
    expect(server.requests[0]!.authorization).toBeUndefined();
    expect(server.requests[0]!.clientCN).toBeUndefined();
  });

  it("reads file references through readFile, relative ones from baseDir, and trims tokenFile", async () => {
    const files: Record<string, string> = {
      "/etc/kubernetes/pki/ca.crt": pki.caCert,
      "/var/lib/kubelet/pki/kubelet-client-current.pem": pki.clientCert + pki.clientKey,
    };
    const read: string[] = [];
    const readFile = (path: string) => {
      read.push(path);
      const content = files[path];
      return content === undefined
        ? Promise.reject(new Error(`ENOENT: ${path}`))
        : Promise.resolve(Buffer.from(content));
    };
    const text = kubeconfigText(
      server.url,
      { "certificate-authority": "pki/ca.crt" },
      {
        "client-certificate": "/var/lib/kubelet/pki/kubelet-client-current.pem",
        "client-key": "/var/lib/kubelet/pki/kubelet-client-current.pem",
      },
    );
    const client = await kubeClientFromKubeConfig(text, {
      description: "/etc/kubernetes/kubelet.conf",
      readFile,
      baseDir: "/etc/kubernetes",
    });
    await client.getRaw("/version");
    // A kubelet's kubeconfig names one PEM file as certificate and key: it is read once.
    expect(read.sort()).toEqual([
      "/etc/kubernetes/pki/ca.crt",
      "/var/lib/kubelet/pki/kubelet-client-current.pem",
    ]);
    expect(server.requests[0]!.clientCN).toBe("kubernetes-admin");

    files["/var/run/secrets/token"] = "  secret-token\n";
    const tokenConfig = kubeconfigText(
      server.url,
      { "certificate-authority": "/etc/kubernetes/pki/ca.crt" },
      { tokenFile: "/var/run/secrets/token" },
    );
    const tokenClient = await kubeClientFromKubeConfig(tokenConfig, {
      description: "kube-proxy",
      readFile,
    });
    await tokenClient.getRaw("/version");
    expect(server.requests[1]!.authorization).toBe("Bearer secret-token");
  });

  it("names the missing file and the kubeconfig when a reference cannot be read", async () => {
    const text = kubeconfigText(
      server.url,
      {},
      { "client-certificate": "/nope.pem", "client-key": "/nope.pem" },
    );
    await expect(
      kubeClientFromKubeConfig(text, {
        description: "/etc/kubernetes/kubelet.conf",
        readFile: () => Promise.reject(new Error("ENOENT")),
      }),
    ).rejects.toThrow(
      "cannot read /nope.pem, the client-certificate of /etc/kubernetes/kubelet.conf: ENOENT",
    );
  });

  it("replaces the server when asked (WaitControlPlaneClient)", async () => {
    const text = kubeconfigText(
      "https://192.0.2.1:6443",
      { "certificate-authority-data": b64(pki.caCert) },
      { token: "t" },
    );
    const client = await kubeClientFromKubeConfig(text, {
      description: "admin.conf",
      server: `${server.url}/`,
    });
    await client.getRaw("/livez");
    expect(server.requests.map((r) => r.path)).toEqual(["/livez"]);
  });
});

describe("errors", () => {
  const secret = {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: "bootstrap-token-abcdef", namespace: "kube-system" },
  };

  it.each([
    [
      403,
      "Forbidden",
      'secrets is forbidden: User "system:anonymous" cannot create resource "secrets"',
      "403 Forbidden",
      isForbidden,
    ],
    [404, "NotFound", 'namespaces "kube-system" not found', "404 Not Found", isNotFound],
    [
      409,
      "AlreadyExists",
      'secrets "bootstrap-token-abcdef" already exists',
      "409 Conflict",
      isAlreadyExists,
    ],
    [409, "Conflict", "the object has been modified", "409 Conflict", isConflict],
    [
      422,
      "Invalid",
      'Secret "bootstrap-token-abcdef" is invalid: type: Invalid value',
      "422 Unprocessable Entity",
      isInvalid,
    ],
    [
      500,
      "InternalError",
      "Internal error occurred: etcdserver: request timed out",
      "500 Internal Server Error",
      isTransient,
    ],
  ])(
    "a %i %s Status becomes one short line",
    async (code, reason, message, statusText, predicate) => {
      server.hooks.push(() => status(code, reason, message));
      const client = await adminClient();
      const error = await client.create(secret).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ApiError);
      expect((error as ApiError).message).toBe(
        `creating Secret kube-system/bootstrap-token-abcdef: ${statusText}: ${message}`,
      );
      expect((error as ApiError).code).toBe(code);
      expect((error as ApiError).reason).toBe(reason);
      expect(predicate(error)).toBe(true);
    },
  );

  it("quotes a short text body and derives the reason from the code", async () => {
    server.hooks.push(() => ({ status: 404, body: "404 page not found" }));
    const client = await adminClient();
    const e = (await client
      .get({ apiVersion: "v1", kind: "Node", name: "cp-1" })
      .catch((x: unknown) => x)) as ApiError;
    expect(e.message).toBe("getting Node cp-1: 404 Not Found: 404 page not found");
    expect(isNotFound(e)).toBe(true);
  });

  it("a success that is not JSON is an error naming the status", async () => {
    server.hooks.push(() => ({ status: 200, body: "ok" }));
    const client = await adminClient();
    await expect(client.get({ apiVersion: "v1", kind: "Node", name: "cp-1" })).rejects.toThrow(
      "getting Node cp-1: 200 OK: the response body is not JSON",
    );
  });

  it("never dumps a long body", async () => {
    server.hooks.push(() => ({ status: 502, body: `<html>\n${"x".repeat(5000)}\n</html>` }));
    const client = await adminClient();
    const e = (await client
      .get({ apiVersion: "v1", kind: "Node", name: "cp-1" })
      .catch((x: unknown) => x)) as ApiError;
    expect(e.message).toBe("getting Node cp-1: 502 Bad Gateway");
    expect(isTransient(e)).toBe(true);
  });

  it("a refused connection is an ApiError with code 0 naming the server", async () => {
    const closed: NetServer = createNetServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const text = kubeconfigText(
      `https://127.0.0.1:${port}`,
      { "certificate-authority-data": b64(pki.caCert) },
      { token: "t" },
    );
    const client = await kubeClientFromKubeConfig(text, { description: "admin.conf" });
    const e = (await client.create(secret).catch((x: unknown) => x)) as ApiError;
    expect(e).toBeInstanceOf(ApiError);
    expect(e.code).toBe(0);
    expect(e.networkCode).toBe("ECONNREFUSED");
    expect(e.message).toBe(
      `creating Secret kube-system/bootstrap-token-abcdef: no response from https://127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port}`,
    );
    expect(isTransient(e)).toBe(true);
    // getRaw throws too when nothing answers.
    await expect(client.getRaw("/livez")).rejects.toThrow(
      `getting /livez: no response from https://127.0.0.1:${port}`,
    );
  });

  it("a server certificate from another CA is a TLS failure, not a hang", async () => {
    const text = kubeconfigText(
      server.url,
      { "certificate-authority-data": b64(pki.otherCaCert) },
      { token: "t" },
    );
    const client = await kubeClientFromKubeConfig(text, { description: "admin.conf" });
    const e = (await client.getRaw("/livez").catch((x: unknown) => x)) as ApiError;
    expect(e.code).toBe(0);
    expect(e.message).toMatch(
      new RegExp(`^getting /livez: no response from ${server.url}: .*certificate`),
    );
    expect(server.requests).toHaveLength(0);
  });

  it("a server that never answers times out after requestTimeoutMs", async () => {
    server.hooks.push(() => ({ status: -2, body: "" }));
    const silent: NetServer = createNetServer(() => {
      /* accept and say nothing */
    });
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const port = (silent.address() as AddressInfo).port;
    try {
      const text = kubeconfigText(
        `https://127.0.0.1:${port}`,
        { "insecure-skip-tls-verify": true },
        { token: "t" },
      );
      const client = await kubeClientFromKubeConfig(text, {
        description: "admin.conf",
        requestTimeoutMs: 200,
      });
      const e = (await client.getRaw("/livez").catch((x: unknown) => x)) as ApiError;
      expect(e.code).toBe(0);
      expect(e.message).toBe(
        `getting /livez: no response from https://127.0.0.1:${port}: the request got no answer within 200ms`,
      );
    } finally {
      silent.close();
    }
  });

  it("a dropped connection is transient", async () => {
    server.hooks.push(() => ({ status: -1, body: "" }));
    const client = await adminClient();
    const e = (await client.create(secret).catch((x: unknown) => x)) as ApiError;
    expect(e.code).toBe(0);
    expect(isTransient(e)).toBe(true);
    expect(e.message).toMatch(
      /^creating Secret kube-system\/bootstrap-token-abcdef: no response from https:\/\/127\.0\.0\.1:\d+: /,
    );
  });
});

describe("route", () => {
  const kubeconfigFor = (serverURL: string, cluster: Record<string, unknown> = {}) =>
    kubeconfigText(
      serverURL,
      { "certificate-authority-data": b64(pki.caCert), ...cluster },
      { token: "t" },
    );
  const toFakeServer = (asked: string[]): Route => {
    const port = Number(new URL(server.url).port);
    return (host, p) => {
      asked.push(`${host}:${p}`);
      return Promise.resolve({ host: "127.0.0.1", port });
    };
  };

  it("sends requests to the routed address and verifies the certificate as the server's own", async () => {
    const asked: string[] = [];
    // The certificate names 127.0.0.1: a server of 127.0.0.1 on another port verifies.
    const client = await kubeClientFromKubeConfig(kubeconfigFor("https://127.0.0.1:1"), {
      description: "admin.conf",
      route: toFakeServer(asked),
    });
    await client.getRaw("/livez");
    await client.getRaw("/readyz");
    expect(server.requests.map((r) => r.path)).toEqual(["/livez", "/readyz"]);
    expect(asked).toEqual(["127.0.0.1:1"]);
  });

  it("refuses a routed server whose certificate does not name the original IP, naming that server", async () => {
    const client = await kubeClientFromKubeConfig(kubeconfigFor("https://192.0.2.1:6443"), {
      description: "admin.conf",
      route: toFakeServer([]),
    });
    const e = (await client.getRaw("/livez").catch((x: unknown) => x)) as ApiError;
    expect(e).toBeInstanceOf(ApiError);
    expect(e.message).toMatch(
      /^getting \/livez: no response from https:\/\/192\.0\.2\.1:6443: .*192\.0\.2\.1/,
    );
    expect(server.requests).toHaveLength(0);
  });

  it("still refuses a server certificate from another CA through a route", async () => {
    const client = await kubeClientFromKubeConfig(
      kubeconfigFor("https://127.0.0.1:1", { "certificate-authority-data": b64(pki.otherCaCert) }),
      { description: "admin.conf", route: toFakeServer([]) },
    );
    await expect(client.getRaw("/livez")).rejects.toThrow(/certificate/);
    expect(server.requests).toHaveLength(0);
  });
});

// client-go retries a GET whose connection was reset or closed before the response, a second
// apart, within the request's timeout; it never retries a write, nor a refused connection
// (k8s.io/client-go/rest/request.go, isErrRetryableFunc).

const CM_PATH = "/api/v1/namespaces/kube-system/configmaps/kubeadm-config";
const ref = {
  apiVersion: "v1",
  kind: "ConfigMap",
  name: "kubeadm-config",
  namespace: "kube-system",
};

function retryClient(opts: { requestTimeoutMs?: number } = {}, url = server.url) {
  const text = kubeconfigText(
    url,
    { "certificate-authority-data": b64(pki.caCert) },
    { "client-certificate-data": b64(pki.clientCert), "client-key-data": b64(pki.clientKey) },
  );
  return kubeClientFromKubeConfig(text, { description: "admin.conf", ...opts });
}

/** The first `n` requests get their connection dropped (the socket destroyed, no response). */
function dropFirst(n: number): void {
  let dropped = 0;
  server.hooks.push(() => (dropped++ < n ? { status: -1, body: "" } : undefined));
}

function seed(): void {
  server.objects.set(CM_PATH, {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: "kubeadm-config", namespace: "kube-system", resourceVersion: "7" },
    data: { a: "1" },
  });
}

describe("a GET whose connection was dropped", () => {
  it("is tried again a second later, and again, until it is answered", async () => {
    seed();
    dropFirst(2);
    const c = await retryClient();
    const started = Date.now();
    const cm = await c.get<KubeObject & { data: Record<string, string> }>(ref);
    expect(cm.data).toEqual({ a: "1" });
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      `GET ${CM_PATH}`,
      `GET ${CM_PATH}`,
      `GET ${CM_PATH}`,
    ]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2 * GET_RETRY_AFTER_MS);
  });

  it("is tried no more once the next try would start after the request's timeout", async () => {
    seed();
    dropFirst(100);
    const c = await retryClient({ requestTimeoutMs: 1_500 });
    const e = (await c.get(ref).catch((x: unknown) => x)) as ApiError;
    expect(e.code).toBe(0);
    expect(e.message).toMatch(/^getting ConfigMap kube-system\/kubeadm-config: no response from /);
    expect(server.requests).toHaveLength(2);
  });

  it("is one attempt when the caller asks for one (a probe's sample)", async () => {
    seed();
    dropFirst(1);
    const c = await retryClient();
    await expect(c.getRaw(CM_PATH, { singleAttempt: true })).rejects.toThrow(/no response from/);
    expect(server.requests).toHaveLength(1);
  });
});

describe("not tried again", () => {
  it("a write whose connection was dropped: it may have been applied", async () => {
    dropFirst(1);
    const c = await retryClient();
    const e = (await c
      .create({
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "kubeadm-config", namespace: "kube-system" },
      })
      .catch((x: unknown) => x)) as ApiError;
    expect(e.code).toBe(0);
    expect(server.requests).toHaveLength(1);
  });

  it("a GET refused: nothing listens, that is no hiccup", async () => {
    const closed = createNetServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const c = await retryClient({}, `https://127.0.0.1:${port}`);
    const started = Date.now();
    await expect(c.getRaw("/livez")).rejects.toThrow(/ECONNREFUSED/);
    expect(Date.now() - started).toBeLessThan(GET_RETRY_AFTER_MS);
  });
});

describe("isResetOrEOF", () => {
  const wrapped = (code: string) =>
    new TypeError("fetch failed", { cause: Object.assign(new Error("x"), { code }) });

  it("finds a reset or a closed connection in the cause chain", () => {
    expect(isResetOrEOF(wrapped("ECONNRESET"))).toBe(true);
    expect(isResetOrEOF(wrapped("UND_ERR_SOCKET"))).toBe(true);
    expect(isResetOrEOF(wrapped("EPIPE"))).toBe(true);
  });

  it("says no to a refusal, a timeout or a TLS failure", () => {
    expect(isResetOrEOF(wrapped("ECONNREFUSED"))).toBe(false);
    expect(isResetOrEOF(wrapped("UND_ERR_CONNECT_TIMEOUT"))).toBe(false);
    expect(isResetOrEOF(wrapped("ERR_TLS_CERT_ALTNAME_INVALID"))).toBe(false);
    expect(isResetOrEOF(new Error("plain"))).toBe(false);
  });
});
