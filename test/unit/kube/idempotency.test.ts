import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { kubeClientFromKubeConfig } from "../../../src/kube/client.js";
import { isForbidden } from "../../../src/kube/errors.js";
import {
  createOrMutate,
  createOrRetain,
  createOrUpdate,
  getIfExists,
  annotateCRISocket,
  createOrUpdateService,
  patchNode,
} from "../../../src/kube/idempotency.js";
import { PollTimeoutError } from "../../../src/kube/poll.js";
import type { KubeClient, KubeObject } from "../../../src/kube/types.js";
import {
  b64,
  FakeAPIServer,
  kubeconfigText,
  makePKI,
  removePKI,
  status,
  type RecordedRequest,
  type TestPKI,
} from "./fake-apiserver.js";

let pki: TestPKI;
let server: FakeAPIServer;
let client: KubeClient;

beforeAll(async () => {
  pki = makePKI();
  server = new FakeAPIServer(pki);
  await server.start();
  client = await kubeClientFromKubeConfig(
    kubeconfigText(
      server.url,
      { "certificate-authority-data": b64(pki.caCert) },
      { "client-certificate-data": b64(pki.clientCert), "client-key-data": b64(pki.clientKey) },
    ),
    { description: "admin.conf" },
  );
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

const fast = { timeoutMs: 2000, intervalMs: 10 };
const CM_PATH = "/api/v1/namespaces/kube-system/configmaps/kubeadm-config";

const configMap = (data: Record<string, string>): KubeObject => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: { name: "kubeadm-config", namespace: "kube-system" },
  data,
});

const calls = () => server.requests.map((r) => `${r.method} ${r.path}`);

/** Answers the first `times` requests matching `match` with `reply`. */
function failFirst(
  times: number,
  match: (r: RecordedRequest) => boolean,
  reply: ReturnType<typeof status>,
) {
  let left = times;
  server.hooks.push((r) => (match(r) && left-- > 0 ? reply : undefined));
}

describe("createOrUpdate", () => {
  it("creates a missing object and returns it", async () => {
    const result = await createOrUpdate(client, configMap({ a: "1" }), fast);
    expect(calls()).toEqual(["POST /api/v1/namespaces/kube-system/configmaps"]);
    expect(result.metadata.uid).toBeDefined();
    expect(result.data).toEqual({ a: "1" });
  });

  it("updates an existing object with the object as given (kubeadm sends no resourceVersion)", async () => {
    server.seed(CM_PATH, configMap({ a: "old" }));
    const result = await createOrUpdate(client, configMap({ a: "new" }), fast);
    expect(calls()).toEqual(["POST /api/v1/namespaces/kube-system/configmaps", `PUT ${CM_PATH}`]);
    expect(JSON.parse(server.requests[1]!.body)).toEqual(configMap({ a: "new" }));
    expect(result.data).toEqual({ a: "new" });
    expect(server.objects.get(CM_PATH)!.data).toEqual({ a: "new" });
  });

  it("retries a 403 as kubeadm does (RBAC bindings reach the authorizer late)", async () => {
    failFirst(
      2,
      (r) => r.method === "POST",
      status(
        403,
        "Forbidden",
        'configmaps is forbidden: User "kubernetes-admin" cannot create resource "configmaps"',
      ),
    );
    await createOrUpdate(client, configMap({ a: "1" }), fast);
    expect(calls()).toHaveLength(3);
  });

  it("gives up after the timeout with the last error, which predicates still see", async () => {
    server.hooks.push(() =>
      status(
        403,
        "Forbidden",
        'configmaps is forbidden: User "x" cannot create resource "configmaps"',
      ),
    );
    // Long enough for several HTTPS round trips on a loaded machine.
    const error = (await createOrUpdate(client, configMap({}), {
      timeoutMs: 2000,
      intervalMs: 200,
    }).catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(PollTimeoutError);
    expect(error.message).toBe(
      'timed out after 2s waiting for ConfigMap kube-system/kubeadm-config to be created or updated: creating ConfigMap kube-system/kubeadm-config: 403 Forbidden: configmaps is forbidden: User "x" cannot create resource "configmaps"',
    );
    expect(isForbidden(error)).toBe(true);
    expect(server.requests.length).toBeGreaterThan(2);
  });

  it("fails fast on a rejected body (422 Invalid)", async () => {
    server.hooks.push(() =>
      status(422, "Invalid", 'ConfigMap "kubeadm-config" is invalid: data[a b]: Invalid value'),
    );
    await expect(createOrUpdate(client, configMap({}), fast)).rejects.toThrow(
      "creating ConfigMap kube-system/kubeadm-config: 422 Unprocessable Entity",
    );
    expect(calls()).toHaveLength(1);
  });

  it("fails fast on a Forbidden when the caller says so", async () => {
    server.hooks.push(() => status(403, "Forbidden", "no"));
    await expect(
      createOrUpdate(client, configMap({}), { ...fast, failFast: isForbidden }),
    ).rejects.toThrow("creating ConfigMap kube-system/kubeadm-config: 403 Forbidden: no");
    expect(calls()).toHaveLength(1);
  });

  it("survives a dropped connection", async () => {
    failFirst(1, () => true, { status: -1, body: "" });
    await createOrUpdate(client, configMap({ a: "1" }), fast);
    expect(server.objects.get(CM_PATH)!.data).toEqual({ a: "1" });
  });
});

describe("createOrRetain", () => {
  it("keeps and returns an existing object, writing nothing", async () => {
    server.seed(CM_PATH, configMap({ kubeconfig: "existing" }));
    const result = await createOrRetain(client, configMap({ kubeconfig: "new" }), fast);
    expect(calls()).toEqual([`GET ${CM_PATH}`]);
    expect(result.data).toEqual({ kubeconfig: "existing" });
  });

  it("creates a missing object", async () => {
    const result = await createOrRetain(client, configMap({ kubeconfig: "new" }), fast);
    expect(calls()).toEqual([`GET ${CM_PATH}`, "POST /api/v1/namespaces/kube-system/configmaps"]);
    expect(result.data).toEqual({ kubeconfig: "new" });
  });

  it("returns the winner of a creation race", async () => {
    server.hooks.push((r) => {
      if (r.method === "POST") {
        server.seed(CM_PATH, configMap({ kubeconfig: "theirs" }));
        return status(409, "AlreadyExists", 'configmaps "kubeadm-config" already exists');
      }
      return undefined;
    });
    const result = await createOrRetain(client, configMap({ kubeconfig: "ours" }), fast);
    expect(calls()).toEqual([
      `GET ${CM_PATH}`,
      "POST /api/v1/namespaces/kube-system/configmaps",
      `GET ${CM_PATH}`,
    ]);
    expect(result.data).toEqual({ kubeconfig: "theirs" });
  });
});

describe("getIfExists", () => {
  const ref = {
    apiVersion: "v1",
    kind: "ConfigMap",
    name: "kubeadm-config",
    namespace: "kube-system",
  };

  it("answers undefined for a 404 and the object when it exists", async () => {
    expect(await getIfExists(client, ref, fast)).toBeUndefined();
    server.seed(CM_PATH, configMap({ a: "1" }));
    expect((await getIfExists(client, ref, fast))?.data).toEqual({ a: "1" });
  });

  it("retries other errors until the object can be read", async () => {
    server.seed(CM_PATH, configMap({ a: "1" }));
    failFirst(2, (r) => r.method === "GET", status(503, "ServiceUnavailable", "etcd is starting"));
    expect((await getIfExists(client, ref, fast))?.data).toEqual({ a: "1" });
    expect(calls()).toEqual([`GET ${CM_PATH}`, `GET ${CM_PATH}`, `GET ${CM_PATH}`]);
  });
});

describe("createOrMutate", () => {
  it("mutates the latest version and updates it with its resourceVersion", async () => {
    server.seed(CM_PATH, configMap({ a: "1" }));
    const rv = server.objects.get(CM_PATH)!.metadata.resourceVersion;
    const result = await createOrMutate(
      client,
      configMap({ a: "ignored" }),
      (cm) => {
        cm.data = { ...(cm.data as object), b: "2" };
      },
      fast,
    );
    expect(calls()).toEqual([
      "POST /api/v1/namespaces/kube-system/configmaps",
      `GET ${CM_PATH}`,
      `PUT ${CM_PATH}`,
    ]);
    const sent = JSON.parse(server.requests[2]!.body) as KubeObject;
    expect(sent.metadata.resourceVersion).toBe(rv);
    expect(result.data).toEqual({ a: "1", b: "2" });
  });

  it("retries a 409 Conflict race from the top", async () => {
    server.seed(CM_PATH, configMap({ n: "0" }));
    // Someone else updates the object between our GET and our PUT, once.
    let raced = false;
    server.hooks.push((r) => {
      if (r.method === "PUT" && !raced) {
        raced = true;
        server.seed(CM_PATH, configMap({ n: "theirs" }));
      }
      return undefined;
    });
    let mutations = 0;
    const result = await createOrMutate(
      client,
      configMap({}),
      (cm) => {
        mutations++;
        cm.data = { ...(cm.data as object), mine: "yes" };
      },
      fast,
    );
    expect(mutations).toBe(2);
    expect(calls().filter((c) => c.startsWith("PUT"))).toHaveLength(2);
    expect(result.data).toEqual({ n: "theirs", mine: "yes" });
  });

  it("creates when missing, without calling the mutator", async () => {
    let called = false;
    await createOrMutate(
      client,
      configMap({ a: "1" }),
      () => {
        called = true;
      },
      fast,
    );
    expect(called).toBe(false);
    expect(calls()).toEqual(["POST /api/v1/namespaces/kube-system/configmaps"]);
  });

  it("a mutator that refuses the object fails fast with its own message", async () => {
    server.seed(CM_PATH, configMap({ a: "1" }));
    await expect(
      createOrMutate(
        client,
        configMap({}),
        () => {
          throw new Error("cluster-info holds another CA");
        },
        fast,
      ),
    ).rejects.toThrow("cluster-info holds another CA");
    expect(calls()).toHaveLength(2);
  });
});

describe("updateFirst: the objects most likely exist (an upgrade's re-apply)", () => {
  const first = { ...fast, updateFirst: true };
  const SVC_PATH = "/api/v1/namespaces/kube-system/services/kube-dns";
  const service = (ip: string): KubeObject => ({
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: "kube-dns", namespace: "kube-system" },
    spec: { clusterIP: ip },
  });

  it("createOrUpdate: one PUT for an existing object, which ends as kubeadm's order leaves it", async () => {
    server.seed(CM_PATH, configMap({ a: "old" }));
    const result = await createOrUpdate(client, configMap({ a: "new" }), first);
    expect(calls()).toEqual([`PUT ${CM_PATH}`]);
    expect(JSON.parse(server.requests[0]!.body)).toEqual(configMap({ a: "new" }));
    expect(result.data).toEqual({ a: "new" });
  });

  it("createOrUpdate: a missing object is created after the PUT's 404", async () => {
    await createOrUpdate(client, configMap({ a: "1" }), first);
    expect(calls()).toEqual([`PUT ${CM_PATH}`, "POST /api/v1/namespaces/kube-system/configmaps"]);
    expect(server.objects.get(CM_PATH)!.data).toEqual({ a: "1" });
  });

  it("createOrUpdate: an object created in between (409 on the POST) is updated on the retry", async () => {
    failFirst(1, (r) => r.method === "PUT", status(404, "NotFound", "not found"));
    server.seed(CM_PATH, configMap({ a: "theirs" }));
    await createOrUpdate(client, configMap({ a: "ours" }), first);
    expect(calls()).toEqual([
      `PUT ${CM_PATH}`,
      "POST /api/v1/namespaces/kube-system/configmaps",
      `PUT ${CM_PATH}`,
    ]);
    expect(server.objects.get(CM_PATH)!.data).toEqual({ a: "ours" });
  });

  it("createOrMutate: reads and mutates an existing object, creating nothing", async () => {
    server.seed(CM_PATH, configMap({ a: "1" }));
    const result = await createOrMutate(
      client,
      configMap({ a: "ignored" }),
      (cm) => {
        cm.data = { ...(cm.data as object), b: "2" };
      },
      first,
    );
    expect(calls()).toEqual([`GET ${CM_PATH}`, `PUT ${CM_PATH}`]);
    expect(result.data).toEqual({ a: "1", b: "2" });
  });

  it("createOrMutate: creates a missing object without calling the mutator", async () => {
    let called = false;
    await createOrMutate(client, configMap({ a: "1" }), () => void (called = true), first);
    expect(called).toBe(false);
    expect(calls()).toEqual([`GET ${CM_PATH}`, "POST /api/v1/namespaces/kube-system/configmaps"]);
  });

  it("createOrUpdateService: one PUT for an existing Service, a POST after a 404", async () => {
    server.seed(SVC_PATH, service("10.96.0.10"));
    await createOrUpdateService(client, service("10.96.0.10"), first);
    expect(calls()).toEqual([`PUT ${SVC_PATH}`]);
    server.requests.length = 0;
    server.objects.clear();
    await createOrUpdateService(client, service("10.96.0.10"), first);
    expect(calls()).toEqual([`PUT ${SVC_PATH}`, "POST /api/v1/namespaces/kube-system/services"]);
  });
});

describe("patchNode", () => {
  const NODE_PATH = "/api/v1/nodes/cp-1";
  const registered = (labels: Record<string, string>): KubeObject => ({
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: "cp-1", labels },
    spec: { taints: [{ key: "node.kubernetes.io/not-ready", effect: "NoSchedule" }] },
  });
  const markControlPlane = (node: KubeObject) => {
    node.metadata.labels = {
      ...node.metadata.labels,
      "node-role.kubernetes.io/control-plane": "",
      "node.kubernetes.io/exclude-from-external-load-balancers": "",
    };
    (node.spec as { taints: unknown[] }).taints.push({
      key: "node-role.kubernetes.io/control-plane",
      effect: "NoSchedule",
    });
  };

  it("waits for the Node and its hostname label, then sends the strategic merge patch", async () => {
    let gets = 0;
    server.hooks.push((r) => {
      if (r.method !== "GET") return undefined;
      gets++;
      if (gets === 1) return status(404, "NotFound", 'nodes "cp-1" not found');
      if (gets === 2) return { status: 200, body: registered({}) };
      return undefined;
    });
    server.seed(NODE_PATH, registered({ "kubernetes.io/hostname": "cp-1" }));
    const result = await patchNode(client, "cp-1", markControlPlane, fast);
    expect(calls()).toEqual([
      `GET ${NODE_PATH}`,
      `GET ${NODE_PATH}`,
      `GET ${NODE_PATH}`,
      `PATCH ${NODE_PATH}`,
    ]);
    const patch = server.requests[3]!;
    expect(patch.contentType).toBe("application/strategic-merge-patch+json");
    expect(patch.body).toBe(
      '{"metadata":{"labels":{"node-role.kubernetes.io/control-plane":"","node.kubernetes.io/exclude-from-external-load-balancers":""}},' +
        '"spec":{"taints":[{"effect":"NoSchedule","key":"node.kubernetes.io/not-ready"},{"effect":"NoSchedule","key":"node-role.kubernetes.io/control-plane"}]}}',
    );
    expect(result.metadata.name).toBe("cp-1");
  });

  it("retries a 409 Conflict on PATCH", async () => {
    server.seed(NODE_PATH, registered({ "kubernetes.io/hostname": "cp-1" }));
    failFirst(
      1,
      (r) => r.method === "PATCH",
      status(409, "Conflict", "the object has been modified"),
    );
    await patchNode(client, "cp-1", markControlPlane, fast);
    expect(calls().filter((c) => c.startsWith("PATCH"))).toHaveLength(2);
  });

  it("fails fast on a Forbidden PATCH, as PatchNodeOnce does", async () => {
    server.seed(NODE_PATH, registered({ "kubernetes.io/hostname": "cp-1" }));
    server.hooks.push((r) =>
      r.method === "PATCH" ? status(403, "Forbidden", 'nodes "cp-1" is forbidden') : undefined,
    );
    const error = await patchNode(client, "cp-1", markControlPlane, fast).catch((e: unknown) => e);
    expect((error as Error).message).toBe(
      'patching Node cp-1: 403 Forbidden: nodes "cp-1" is forbidden',
    );
    expect(calls()).toEqual([`GET ${NODE_PATH}`, `PATCH ${NODE_PATH}`]);
  });

  it("says why it gave up when the label never appears", async () => {
    server.seed(NODE_PATH, registered({}));
    await expect(
      patchNode(client, "cp-1", markControlPlane, { timeoutMs: 2000, intervalMs: 200 }),
    ).rejects.toThrow(
      "timed out after 2s waiting for the Node cp-1 to be patched: the Node cp-1 has no kubernetes.io/hostname label yet",
    );
  });
});

describe("createOrUpdateService", () => {
  it("falls back to an update on Invalid (cluster IP already allocated)", async () => {
    const svc: KubeObject = {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "kube-dns", namespace: "kube-system", resourceVersion: "0" },
      spec: { clusterIP: "10.96.0.10" },
    };
    server.seed("/api/v1/namespaces/kube-system/services/kube-dns", svc);
    failFirst(
      1,
      (r) => r.method === "POST",
      status(
        422,
        "Invalid",
        'Service "kube-dns" is invalid: spec.clusterIP: Invalid value: "10.96.0.10": provided IP is already allocated',
      ),
    );
    await createOrUpdateService(client, svc, fast);
    expect(calls()).toEqual([
      "POST /api/v1/namespaces/kube-system/services",
      "PUT /api/v1/namespaces/kube-system/services/kube-dns",
    ]);
  });

  it("does not retry a Forbidden", async () => {
    server.hooks.push(() => status(403, "Forbidden", "no"));
    const svc: KubeObject = {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: "kube-dns", namespace: "kube-system" },
    };
    await expect(createOrUpdateService(client, svc, fast)).rejects.toThrow(
      "creating Service kube-system/kube-dns: 403 Forbidden: no",
    );
    expect(calls()).toHaveLength(1);
  });
});

describe("annotateCRISocket (kubeadm phases/patchnode)", () => {
  it("adds kubeadm's CRI socket annotation with a strategic merge patch, keeping the others", async () => {
    const path = "/api/v1/nodes/w-1";
    server.seed(path, {
      apiVersion: "v1",
      kind: "Node",
      metadata: {
        name: "w-1",
        labels: { "kubernetes.io/hostname": "w-1" },
        annotations: { "node.alpha.kubernetes.io/ttl": "0" },
      },
    });
    const lines: string[] = [];
    await annotateCRISocket(client, "w-1", "unix:///run/containerd/containerd.sock", fast, (l) =>
      lines.push(l),
    );
    const patch = server.requests.find((r) => r.method === "PATCH")!;
    expect(patch.contentType).toContain("application/strategic-merge-patch+json");
    expect(JSON.parse(patch.body)).toEqual({
      metadata: {
        annotations: {
          "kubeadm.alpha.kubernetes.io/cri-socket": "unix:///run/containerd/containerd.sock",
        },
      },
    });
    expect(lines).toEqual([
      '[patchnode] Uploading the CRI socket information "unix:///run/containerd/containerd.sock" to the Node API object "w-1" as an annotation',
    ]);
  });
});
