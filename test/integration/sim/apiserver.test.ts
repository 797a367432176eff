// Tests of the SIMULATED kube-apiserver and kube-controller-manager controllers (a test double,
// test/support/sim/apiserver). They pin the behaviours the simulation copies from Kubernetes, so
// that kubeforge's API phases tested against it meet what a real cluster would answer. Real
// tools check the results: openssl (certificates), kubectl (Go client, discovery, tables).
import { execFile } from "node:child_process";
import { createHmac, X509Certificate } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { once } from "node:events";
import type { IncomingHttpHeaders } from "node:http";
import { request } from "node:https";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  apiServerOptionsFromCommand,
  controllersOptionsFromCommand,
  isControllerEnabled,
  ObjectStore,
  startFakeApiServer,
  startFakeControllers,
  StatusError,
  type FakeApiServer,
  type FakeApiServerOptions,
  type StoredObject,
} from "../../support/sim/apiserver/index.js";
import { makeCA, makeCSR, makeLeaf, type KeyPair } from "../../support/sim/apiserver/test-pki.js";

const run = promisify(execFile);

interface Resp {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  json: <T = Record<string, unknown>>() => T;
}

interface CallOptions {
  as?: KeyPair;
  token?: string;
  body?: unknown;
  contentType?: string;
  accept?: string;
  server?: FakeApiServer;
}

let dir: string;
let ca: KeyPair;
let otherCA: KeyPair;
let serving: KeyPair;
let admin: KeyPair;
let alice: KeyPair;
let serverAuthOnly: KeyPair;
let foreign: KeyPair;
let node1: KeyPair;
let api: FakeApiServer;
let kcm: { stop(): void };
let caPem: string;

/** A second simulated API server on the suite's store, serving certificate and client CA. */
function anotherServer(
  o: Pick<FakeApiServerOptions, "enableBootstrapTokenAuth" | "anonymousAuth">,
): Promise<FakeApiServer> {
  return startFakeApiServer({
    securePort: 0,
    tlsCertFile: serving.cert,
    tlsPrivateKeyFile: serving.key,
    clientCAFile: ca.cert,
    store: api.store,
    ...o,
  });
}

function call(method: string, path: string, o: CallOptions = {}): Promise<Resp> {
  const server = o.server ?? api;
  const url = new URL(path, server.url);
  return new Promise((resolve, reject) => {
    const body =
      o.body === undefined
        ? undefined
        : typeof o.body === "string"
          ? o.body
          : JSON.stringify(o.body);
    const headers: Record<string, string> = { Accept: o.accept ?? "application/json" };
    if (body !== undefined) headers["Content-Type"] = o.contentType ?? "application/json";
    if (o.token) headers.Authorization = `Bearer ${o.token}`;
    const req = request(
      url,
      {
        method,
        headers,
        ca: caPem,
        agent: false,
        ...(o.as ? { cert: readFileSyncCache(o.as.cert), key: readFileSyncCache(o.as.key) } : {}),
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text,
            json: <T>() => JSON.parse(text) as T,
          }),
        );
      },
    );
    req.on("error", reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

const fileCache = new Map<string, string>();
function readFileSyncCache(p: string): string {
  const v = fileCache.get(p);
  if (v === undefined) throw new Error(`test file ${p} not loaded`);
  return v;
}
async function load(...pairs: KeyPair[]): Promise<void> {
  for (const p of pairs) {
    fileCache.set(p.cert, await readFile(p.cert, "utf8"));
    fileCache.set(p.key, await readFile(p.key, "utf8"));
  }
}

const b64 = (s: string) => Buffer.from(s).toString("base64");

function tokenSecret(
  id: string,
  secret: string,
  extra: Record<string, string> = {},
): Record<string, unknown> {
  const data: Record<string, string> = {
    "token-id": id,
    "token-secret": secret,
    "usage-bootstrap-authentication": "true",
    "usage-bootstrap-signing": "true",
    "auth-extra-groups": "system:bootstrappers:kubeadm:default-node-token",
    ...extra,
  };
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: `bootstrap-token-${id}`, namespace: "kube-system" },
    type: "bootstrap.kubernetes.io/token",
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
  };
}

function rfc3339(msFromNow: number): string {
  return new Date(Date.now() + msFromNow).toISOString().replace(/\.\d{3}Z$/, "Z");
}

function cm(
  namespace: string,
  name: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name, namespace },
    data: { a: "1" },
    ...extra,
  };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "kubeforge-sim-apiserver-"));
  ca = await makeCA(dir, "ca");
  otherCA = await makeCA(dir, "other-ca");
  serving = await makeLeaf(dir, "apiserver", ca, {
    cn: "kube-apiserver",
    eku: "serverAuth",
    san: "IP:127.0.0.1,DNS:localhost",
  });
  admin = await makeLeaf(dir, "admin", ca, { cn: "kubernetes-admin", orgs: ["system:masters"] });
  alice = await makeLeaf(dir, "alice", ca, { cn: "alice", orgs: ["dev"] });
  serverAuthOnly = await makeLeaf(dir, "server-only", ca, {
    cn: "mallory",
    orgs: ["system:masters"],
    eku: "serverAuth",
  });
  foreign = await makeLeaf(dir, "foreign", otherCA, {
    cn: "kubernetes-admin",
    orgs: ["system:masters"],
  });
  node1 = await makeLeaf(dir, "node1", ca, { cn: "system:node:node1", orgs: ["system:nodes"] });
  await load(admin, alice, serverAuthOnly, foreign, node1);
  caPem = await readFile(ca.cert, "utf8");
  api = await startFakeApiServer({
    securePort: 0,
    tlsCertFile: serving.cert,
    tlsPrivateKeyFile: serving.key,
    clientCAFile: ca.cert,
    enableBootstrapTokenAuth: true,
    serviceClusterIPRange: "10.96.0.0/12",
  });
  kcm = startFakeControllers(api.store, {
    clusterSigningCertFile: ca.cert,
    clusterSigningKeyFile: ca.key,
    rootCAFile: ca.cert,
  });
  // kubeadm's bootstrap-token RBAC (kubeadm-facts §9.4), as a kubeforge init would create it.
  for (const [name, role, group] of [
    [
      "kubeadm:kubelet-bootstrap",
      "system:node-bootstrapper",
      "system:bootstrappers:kubeadm:default-node-token",
    ],
    [
      "kubeadm:node-autoapprove-bootstrap",
      "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
      "system:bootstrappers:kubeadm:default-node-token",
    ],
    [
      "kubeadm:node-autoapprove-certificate-rotation",
      "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
      "system:nodes",
    ],
  ] as const) {
    api.store.create({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role },
      subjects: [{ kind: "Group", apiGroup: "rbac.authorization.k8s.io", name: group }],
    });
  }
});

afterAll(async () => {
  kcm?.stop();
  await api?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("authentication", () => {
  it("takes x509 client certificates from the client CA: user = CN, groups = O + system:authenticated", async () => {
    const r = await call("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {
      as: alice,
      body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
    });
    expect(r.status).toBe(201);
    expect(r.json<{ status: unknown }>().status).toEqual({
      userInfo: { username: "alice", groups: ["dev", "system:authenticated"] },
    });
  });

  it.each([
    ["a certificate from another CA", () => ({ as: foreign })],
    ["a certificate without clientAuth usage", () => ({ as: serverAuthOnly })],
    ["an unknown bearer token", () => ({ token: "abcdef.0123456789abcdef" })],
    ["a malformed bearer token", () => ({ token: "not-a-token" })],
  ])("answers 401 to %s, never falling back to anonymous", async (_what, opts) => {
    const r = await call("GET", "/livez", opts());
    expect(r.status).toBe(401);
    expect(r.json()).toEqual({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: "Unauthorized",
      reason: "Unauthorized",
      code: 401,
    });
  });

  it("lets anonymous requests through to what system:public-info-viewer allows, and no further", async () => {
    const live = await call("GET", "/livez");
    expect(live.status).toBe(200);
    expect(live.text).toBe("ok");
    const version = await call("GET", "/version");
    expect(version.json<{ gitVersion: string }>().gitVersion).toBe("v1.35.0");
    const discovery = await call("GET", "/api");
    expect(discovery.status).toBe(403);
    expect(discovery.json<{ message: string }>().message).toBe(
      'forbidden: User "system:anonymous" cannot get path "/api"',
    );
  });

  it("writes the 403 body kube-apiserver writes", async () => {
    const r = await call("POST", "/api/v1/namespaces/kube-system/secrets", {
      body: { apiVersion: "v1", kind: "Secret", metadata: { name: "x" } },
    });
    expect(r.status).toBe(403);
    expect(r.json()).toEqual({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message:
        'secrets is forbidden: User "system:anonymous" cannot create resource "secrets" in API group "" in the namespace "kube-system"',
      reason: "Forbidden",
      details: { kind: "secrets" },
      code: 403,
    });
    const named = await call("GET", "/apis/certificates.k8s.io/v1/certificatesigningrequests/foo", {
      as: alice,
    });
    expect(named.json()).toMatchObject({
      message:
        'certificatesigningrequests.certificates.k8s.io "foo" is forbidden: User "alice" cannot get resource "certificatesigningrequests" in API group "certificates.k8s.io" at the cluster scope',
      details: { name: "foo", group: "certificates.k8s.io", kind: "certificatesigningrequests" },
    });
  });

  describe("bootstrap tokens", () => {
    const whoami = (token: string) =>
      call("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {
        token,
        body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
      });

    it("authenticates <id>.<secret> against kube-system/bootstrap-token-<id>", async () => {
      api.store.create(tokenSecret("aaaaaa", "0123456789abcdef"));
      const r = await whoami("aaaaaa.0123456789abcdef");
      expect(r.status).toBe(201);
      expect(r.json<{ status: unknown }>().status).toEqual({
        userInfo: {
          username: "system:bootstrap:aaaaaa",
          groups: [
            "system:bootstrappers",
            "system:bootstrappers:kubeadm:default-node-token",
            "system:authenticated",
          ],
        },
      });
    });

    it.each([
      ["a wrong secret", "bbbbbb", {}, "bbbbbb.xxxxxxxxxxxxxxxx"],
      [
        "a past expiration",
        "cccccc",
        { expiration: "2000-01-01T00:00:00Z" },
        "cccccc.0123456789abcdef",
      ],
      ["an unparsable expiration", "dddddd", { expiration: "tomorrow" }, "dddddd.0123456789abcdef"],
      [
        "no authentication usage",
        "eeeeee",
        { "usage-bootstrap-authentication": "false" },
        "eeeeee.0123456789abcdef",
      ],
      [
        "an invalid extra group",
        "ffffff",
        { "auth-extra-groups": "system:masters" },
        "ffffff.0123456789abcdef",
      ],
    ])("refuses a token with %s", async (_what, id, extra, token) => {
      api.store.create(tokenSecret(id, "0123456789abcdef", extra as Record<string, string>));
      expect((await whoami(token)).status).toBe(401);
    });

    it("refuses tokens when bootstrap-token authentication is off, and anonymous when it is off", async () => {
      const strict = await anotherServer({ enableBootstrapTokenAuth: false, anonymousAuth: false });
      try {
        expect(
          (await call("GET", "/livez", { server: strict, token: "aaaaaa.0123456789abcdef" }))
            .status,
        ).toBe(401);
        expect((await call("GET", "/livez", { server: strict })).status).toBe(401);
        expect((await call("GET", "/livez", { server: strict, as: admin })).status).toBe(200);
      } finally {
        await strict.stop();
      }
    });
  });
});

describe("authorization", () => {
  it("applies Roles through RoleBindings in their namespace only, including resourceNames", async () => {
    api.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "team" } });
    const list = () => call("GET", "/api/v1/namespaces/team/configmaps", { as: alice });
    expect((await list()).status).toBe(403);
    api.store.create({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "reader", namespace: "team" },
      rules: [
        { apiGroups: [""], resources: ["configmaps"], verbs: ["list"] },
        { apiGroups: [""], resources: ["configmaps"], verbs: ["get"], resourceNames: ["public"] },
      ],
    });
    api.store.create({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "reader", namespace: "team" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "reader" },
      subjects: [{ kind: "Group", apiGroup: "rbac.authorization.k8s.io", name: "dev" }],
    });
    api.store.create(cm("team", "public"));
    api.store.create(cm("team", "private"));
    expect((await list()).status).toBe(200);
    expect((await call("GET", "/api/v1/namespaces/default/configmaps", { as: alice })).status).toBe(
      403,
    );
    expect(
      (await call("GET", "/api/v1/namespaces/team/configmaps/public", { as: alice })).status,
    ).toBe(200);
    expect(
      (await call("GET", "/api/v1/namespaces/team/configmaps/private", { as: alice })).status,
    ).toBe(403);
  });

  it("says why when a binding names a role that does not exist", async () => {
    api.store.create({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "dangling", namespace: "team" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "missing" },
      subjects: [{ kind: "User", apiGroup: "rbac.authorization.k8s.io", name: "alice" }],
    });
    const r = await call("DELETE", "/api/v1/namespaces/team/configmaps/public", { as: alice });
    expect(r.json<{ message: string }>().message).toBe(
      'configmaps "public" is forbidden: User "alice" cannot delete resource "configmaps" in API group "" in the namespace "team": RBAC: role.rbac.authorization.k8s.io "missing" not found',
    );
  });

  it("answers SubjectAccessReviews for subresource rules of the bootstrap policy", async () => {
    const review = async (user: string, groups: string[], subresource: string) => {
      const r = await call("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", {
        as: admin,
        body: {
          apiVersion: "authorization.k8s.io/v1",
          kind: "SubjectAccessReview",
          spec: {
            user,
            groups,
            resourceAttributes: {
              group: "certificates.k8s.io",
              resource: "certificatesigningrequests",
              verb: "create",
              subresource,
            },
          },
        },
      });
      return r.json<{ status: { allowed: boolean } }>().status.allowed;
    };
    const bootstrapper = [
      "system:bootstrappers",
      "system:bootstrappers:kubeadm:default-node-token",
      "system:authenticated",
    ];
    expect(await review("system:bootstrap:aaaaaa", bootstrapper, "nodeclient")).toBe(true);
    expect(await review("system:bootstrap:aaaaaa", bootstrapper, "selfnodeclient")).toBe(false);
    expect(
      await review("system:node:n", ["system:nodes", "system:authenticated"], "selfnodeclient"),
    ).toBe(true);
    expect(await review("alice", ["dev"], "nodeclient")).toBe(false);
  });

  it("lets a node write its own Node but not another's, and not change its taints", async () => {
    const node = (name: string, taints: unknown[] = []) => ({
      apiVersion: "v1",
      kind: "Node",
      metadata: { name },
      spec: { taints },
    });
    const taint = { key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" };
    expect(
      (await call("POST", "/api/v1/nodes", { as: node1, body: node("node1", [taint]) })).status,
    ).toBe(201);
    const other = await call("POST", "/api/v1/nodes", { as: node1, body: node("node2") });
    expect(other.status).toBe(403);
    expect(other.json<{ message: string }>().message).toBe(
      'nodes "node2" is forbidden: node "node1" is not allowed to modify node "node2"',
    );
    const untaint = await call("PATCH", "/api/v1/nodes/node1", {
      as: node1,
      contentType: "application/strategic-merge-patch+json",
      body: { spec: { taints: [] } },
    });
    expect(untaint.json<{ message: string }>().message).toBe(
      'nodes "node1" is forbidden: node "node1" is not allowed to modify taints',
    );
    const label = await call("PATCH", "/api/v1/nodes/node1", {
      as: node1,
      contentType: "application/strategic-merge-patch+json",
      body: { metadata: { labels: { "kubernetes.io/hostname": "node1" } } },
    });
    expect(label.status).toBe(200);
  });

  it("gives nodes secrets only through pods bound to them", async () => {
    api.store.create({
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: "used", namespace: "team" },
      data: {},
    });
    const get = () => call("GET", "/api/v1/namespaces/team/secrets/used", { as: node1 });
    const denied = await get();
    expect(denied.json<{ message: string }>().message).toBe(
      `secrets "used" is forbidden: User "system:node:node1" cannot get resource "secrets" in API group "" in the namespace "team": no relationship found between node 'node1' and this object`,
    );
    api.store.create({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "p", namespace: "team" },
      spec: {
        nodeName: "node1",
        containers: [{ name: "c", image: "i" }],
        volumes: [{ name: "s", secret: { secretName: "used" } }],
      },
    });
    expect((await get()).status).toBe(200);
  });
});

describe("object semantics", () => {
  const path = "/api/v1/namespaces/default/configmaps";

  it("creates with server-set metadata and refuses a second create with 409 AlreadyExists", async () => {
    const first = await call("POST", path, { as: admin, body: cm("default", "one") });
    expect(first.status).toBe(201);
    const meta = first.json<{ metadata: Record<string, unknown> }>().metadata;
    expect(meta.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(meta.resourceVersion).toMatch(/^\d+$/);
    expect(meta.creationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const again = await call("POST", path, { as: admin, body: cm("default", "one") });
    expect(again.status).toBe(409);
    expect(again.json()).toEqual({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: 'configmaps "one" already exists',
      reason: "AlreadyExists",
      details: { name: "one", kind: "configmaps" },
      code: 409,
    });
  });

  it("answers 404 NotFound for a missing object, and for a missing namespace on create", async () => {
    const r = await call("GET", `${path}/nothing`, { as: admin });
    expect(r.status).toBe(404);
    expect(r.json()).toEqual({
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: 'configmaps "nothing" not found',
      reason: "NotFound",
      details: { name: "nothing", kind: "configmaps" },
      code: 404,
    });
    const ns = await call("POST", "/api/v1/namespaces/nope/configmaps", {
      as: admin,
      body: cm("nope", "x"),
    });
    expect(ns.status).toBe(404);
    expect(ns.json<{ message: string }>().message).toBe('namespaces "nope" not found');
  });

  it("refuses an update carrying a stale resourceVersion with 409 Conflict", async () => {
    const created = api.store.create(cm("default", "versioned"));
    api.store.update({ ...created, data: { a: "2" } });
    const stale = await call("PUT", `${path}/versioned`, {
      as: admin,
      body: { ...created, data: { a: "3" } },
    });
    expect(stale.status).toBe(409);
    expect(stale.json()).toMatchObject({
      reason: "Conflict",
      message:
        'Operation cannot be fulfilled on configmaps "versioned": the object has been modified; please apply your changes to the latest version and try again',
      details: { name: "versioned", kind: "configmaps" },
    });
    const { resourceVersion: _rv, ...meta } = created.metadata;
    const unconditional = await call("PUT", `${path}/versioned`, {
      as: admin,
      body: { ...created, metadata: meta, data: { a: "3" } },
    });
    expect(unconditional.status).toBe(200);
    expect(unconditional.json<{ data: unknown }>().data).toEqual({ a: "3" });
  });

  it("keeps the resourceVersion when an update changes nothing", () => {
    const created = api.store.create(cm("default", "still"));
    const same = api.store.update(created);
    expect(same.metadata.resourceVersion).toBe(created.metadata.resourceVersion);
    const changed = api.store.update({ ...created, data: { a: "9" } });
    expect(Number(changed.metadata.resourceVersion)).toBeGreaterThan(
      Number(created.metadata.resourceVersion),
    );
  });

  it("validates names and keys with the API server's messages (422 Invalid)", async () => {
    const r = await call("POST", path, {
      as: admin,
      body: cm("default", "Bad_Name", { data: { "bad key": "v" } }),
    });
    expect(r.status).toBe(422);
    const body = r.json<{ message: string; details: { causes: { field: string }[] } }>();
    expect(body.message).toMatch(
      /^ConfigMap "Bad_Name" is invalid: \[metadata\.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain/,
    );
    expect(body.details.causes.map((c) => c.field)).toEqual(["metadata.name", "data[bad key]"]);
  });

  it("names objects from generateName", () => {
    const o = api.store.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { generateName: "gen-", namespace: "default" },
    });
    expect(o.metadata.name).toMatch(/^gen-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  });

  it("deletes, and garbage-collects dependents of a deleted owner (kubeadm-certs owned by a token Secret)", async () => {
    const owner = api.store.create(tokenSecret("gcgcgc", "0123456789abcdef"));
    api.store.create({
      apiVersion: "v1",
      kind: "Secret",
      metadata: {
        name: "kubeadm-certs",
        namespace: "kube-system",
        ownerReferences: [
          {
            apiVersion: "v1",
            kind: "Secret",
            name: owner.metadata.name,
            uid: owner.metadata.uid,
            blockOwnerDeletion: true,
            controller: true,
          },
        ],
      },
      data: { "ca.crt": b64("x") },
    });
    const del = await call(
      "DELETE",
      "/api/v1/namespaces/kube-system/secrets/bootstrap-token-gcgcgc",
      { as: admin },
    );
    expect(del.status).toBe(200);
    expect(del.json()).toMatchObject({
      kind: "Status",
      status: "Success",
      details: { name: "bootstrap-token-gcgcgc", kind: "secrets" },
    });
    await api.store.waitFor(
      () =>
        api.store.get({
          apiVersion: "v1",
          kind: "Secret",
          namespace: "kube-system",
          name: "kubeadm-certs",
        })
          ? undefined
          : true,
      2000,
      "kubeadm-certs to be garbage-collected",
    );
  });

  it("garbage-collects an object whose owner reference matches no live object", async () => {
    api.store.create(
      cm("default", "orphan", {
        metadata: {
          name: "orphan",
          namespace: "default",
          ownerReferences: [
            {
              apiVersion: "v1",
              kind: "ConfigMap",
              name: "one",
              uid: "00000000-0000-0000-0000-000000000000",
            },
          ],
        },
      }),
    );
    await api.store.waitFor(
      () =>
        api.store.get({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "orphan" })
          ? undefined
          : true,
      2000,
      "the dangling dependent to go",
    );
  });

  it("throws StatusError from the store itself", () => {
    try {
      api.store.create(cm("default", "one"));
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(StatusError);
      expect((e as StatusError).code).toBe(409);
    }
  });
});

describe("watch", () => {
  it("streams changes after a resourceVersion as JSON lines; too old a version is Expired", async () => {
    const rv = api.store.resourceVersion;
    const events: { type: string; object: StoredObject }[] = [];
    const done = new Promise<void>((resolve, reject) => {
      const req = request(
        new URL(
          `/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${rv}&labelSelector=w%3Dyes`,
          api.url,
        ),
        {
          ca: caPem,
          cert: readFileSyncCache(admin.cert),
          key: readFileSyncCache(admin.key),
          agent: false,
        },
        (res) => {
          let buf = "";
          res.setEncoding("utf8");
          res.on("data", (c: string) => {
            buf += c;
            let i: number;
            while ((i = buf.indexOf("\n")) >= 0) {
              events.push(JSON.parse(buf.slice(0, i)) as { type: string; object: StoredObject });
              buf = buf.slice(i + 1);
              if (events.length === 2) {
                req.destroy();
                resolve();
              }
            }
          });
        },
      );
      req.on("error", (e) => (events.length === 2 ? resolve() : reject(e)));
      req.end();
    });
    await new Promise((r) => setTimeout(r, 50));
    api.store.create(cm("default", "watched-no"));
    const w = api.store.create(
      cm("default", "watched", {
        metadata: { name: "watched", namespace: "default", labels: { w: "yes" } },
      }),
    );
    api.store.delete({
      apiVersion: "v1",
      kind: "ConfigMap",
      namespace: "default",
      name: "watched",
    });
    await done;
    expect(events.map((e) => [e.type, e.object.metadata.name, e.object.kind])).toEqual([
      ["ADDED", "watched", "ConfigMap"],
      ["DELETED", "watched", "ConfigMap"],
    ]);
    expect(events[0]!.object.metadata.resourceVersion).toBe(w.metadata.resourceVersion);
    // A version older than the kept history (etcd compaction) is 410 Expired.
    const small = new ObjectStore({ historyLimit: 3 });
    for (const n of ["a", "b", "c", "d"]) small.create(cm("default", n));
    expect(() => small.eventsSince(1)).toThrow(/too old resource version/);
    expect(
      small.eventsSince(Number(small.resourceVersion) - 1).map((e) => e.object.metadata.name),
    ).toEqual(["d"]);
  });
});

describe("patches", () => {
  it("strategic-merges a Node: maps merge, conditions merge by type, taints are replaced", async () => {
    api.store.create({
      apiVersion: "v1",
      kind: "Node",
      metadata: { name: "patchme", labels: { a: "1" } },
      spec: { taints: [{ key: "x", effect: "NoSchedule" }] },
      status: {
        conditions: [
          { type: "Ready", status: "False" },
          { type: "MemoryPressure", status: "False" },
        ],
      },
    });
    const r = await call("PATCH", "/api/v1/nodes/patchme", {
      as: admin,
      contentType: "application/strategic-merge-patch+json",
      body: {
        metadata: { labels: { b: "2" } },
        spec: { taints: [{ key: "y", effect: "NoExecute" }] },
      },
    });
    expect(r.status).toBe(200);
    const n = r.json<StoredObject>();
    expect(n.metadata.labels).toEqual({ a: "1", b: "2" });
    expect((n.spec as { taints: unknown }).taints).toEqual([{ key: "y", effect: "NoExecute" }]);
    const s = await call("PATCH", "/api/v1/nodes/patchme/status", {
      as: admin,
      contentType: "application/strategic-merge-patch+json",
      body: { status: { conditions: [{ type: "Ready", status: "True" }] } },
    });
    expect((s.json<StoredObject>().status as { conditions: unknown }).conditions).toEqual([
      { type: "Ready", status: "True" },
      { type: "MemoryPressure", status: "False" },
    ]);
  });

  it("ignores status in a PATCH of the main resource (status subresource)", async () => {
    const r = await call("PATCH", "/api/v1/nodes/patchme", {
      as: admin,
      contentType: "application/merge-patch+json",
      body: { status: { conditions: [] } },
    });
    expect((r.json<StoredObject>().status as { conditions: unknown[] }).conditions.length).toBe(2);
  });

  it("merges containers by name in a pod template", () => {
    api.store.create({
      apiVersion: "apps/v1",
      kind: "DaemonSet",
      metadata: { name: "ds", namespace: "default" },
      spec: {
        selector: { matchLabels: { k: "v" } },
        template: {
          metadata: { labels: { k: "v" } },
          spec: {
            containers: [
              { name: "a", image: "a:1" },
              { name: "b", image: "b:1" },
            ],
          },
        },
      },
    });
    const out = api.store.patch(
      { apiVersion: "apps/v1", kind: "DaemonSet", namespace: "default", name: "ds" },
      { spec: { template: { spec: { containers: [{ name: "b", image: "b:2" }] } } } },
      "strategic",
    );
    const containers = (out.spec as { template: { spec: { containers: unknown[] } } }).template.spec
      .containers;
    expect(containers).toEqual([
      { name: "a", image: "a:1" },
      { name: "b", image: "b:2" },
    ]);
    expect(out.metadata.generation).toBe(2);
  });

  it("applies JSON merge patches (null deletes) and JSON patches", async () => {
    api.store.create(cm("default", "jp", { data: { a: "1", b: "2" } }));
    const merge = await call("PATCH", "/api/v1/namespaces/default/configmaps/jp", {
      as: admin,
      contentType: "application/merge-patch+json",
      body: { data: { a: null, c: "3" } },
    });
    expect(merge.json<{ data: unknown }>().data).toEqual({ b: "2", c: "3" });
    const json = await call("PATCH", "/api/v1/namespaces/default/configmaps/jp", {
      as: admin,
      contentType: "application/json-patch+json",
      body: [
        { op: "replace", path: "/data/b", value: "20" },
        { op: "add", path: "/data/d", value: "4" },
      ],
    });
    expect(json.json<{ data: unknown }>().data).toEqual({ b: "20", c: "3", d: "4" });
    const missing = await call("PATCH", "/api/v1/namespaces/default/configmaps/absent", {
      as: admin,
      contentType: "application/merge-patch+json",
      body: { data: {} },
    });
    expect(missing.status).toBe(404);
    const apply = await call("PATCH", "/api/v1/namespaces/default/configmaps/jp", {
      as: admin,
      contentType: "application/apply-patch+yaml",
      body: "{}",
    });
    expect(apply.status).toBe(415);
  });
});

describe("selectors", () => {
  beforeAll(() => {
    api.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "sel" } });
    for (const [name, labels] of [
      ["s1", { tier: "web", env: "prod" }],
      ["s2", { tier: "db", env: "prod" }],
      ["s3", { tier: "web" }],
    ] as const) {
      api.store.create(cm("sel", name, { metadata: { name, namespace: "sel", labels } }));
    }
  });

  it.each([
    ["tier=web", ["s1", "s3"]],
    ["tier==web,env=prod", ["s1"]],
    // kube-root-ca.crt (published in every namespace) has no labels: != and notin match it.
    ["tier!=web", ["kube-root-ca.crt", "s2"]],
    ["tier in (web,db),env", ["s1", "s2"]],
    ["tier notin (web)", ["kube-root-ca.crt", "s2"]],
    ["!env", ["kube-root-ca.crt", "s3"]],
  ])("labelSelector %s", async (selector, names) => {
    const r = await call(
      "GET",
      `/api/v1/namespaces/sel/configmaps?labelSelector=${encodeURIComponent(selector)}`,
      { as: admin },
    );
    const list = r.json<{ kind: string; items: StoredObject[] }>();
    expect(list.kind).toBe("ConfigMapList");
    expect(list.items.map((i) => i.metadata.name)).toEqual(names);
    expect(list.items[0]).not.toHaveProperty("kind");
  });

  it("fieldSelector metadata.name, and 400 for fields a kind does not select on", async () => {
    const r = await call(
      "GET",
      "/api/v1/namespaces/sel/configmaps?fieldSelector=metadata.name%3Ds2",
      { as: admin },
    );
    expect(r.json<{ items: StoredObject[] }>().items.map((i) => i.metadata.name)).toEqual(["s2"]);
    const bad = await call("GET", "/api/v1/namespaces/sel/configmaps?fieldSelector=data.a%3D1", {
      as: admin,
    });
    expect(bad.status).toBe(400);
    expect(bad.json<{ message: string }>().message).toBe("field label not supported: data.a");
  });
});

describe("schema", () => {
  it("rejects unknown fields as strict field validation does, or warns when asked", async () => {
    const body = cm("default", "typo", {
      metadata: { name: "typo", namespace: "default", lables: { a: "b" } },
    });
    const strict = await call("POST", "/api/v1/namespaces/default/configmaps", { as: admin, body });
    expect(strict.status).toBe(400);
    expect(strict.json()).toMatchObject({
      reason: "BadRequest",
      message: 'strict decoding error: unknown field "metadata.lables"',
    });
    const warn = await call("POST", "/api/v1/namespaces/default/configmaps?fieldValidation=Warn", {
      as: admin,
      body,
    });
    expect(warn.status).toBe(201);
    expect(warn.headers.warning).toBe('299 - "unknown field \\"metadata.lables\\""');
    expect(warn.json<StoredObject>().metadata).not.toHaveProperty("lables");
  });

  it("rejects wrong types and bad base64 with 400 whatever the validation level", async () => {
    const wrong = await call(
      "POST",
      "/api/v1/namespaces/default/configmaps?fieldValidation=Ignore",
      {
        as: admin,
        body: cm("default", "wrongtype", { data: { a: 1 } }),
      },
    );
    expect(wrong.status).toBe(400);
    expect(wrong.json<{ message: string }>().message).toBe(
      'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.data of type string',
    );
    const secret = await call("POST", "/api/v1/namespaces/default/secrets", {
      as: admin,
      body: {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "b64" },
        data: { k: "not base64!" },
      },
    });
    expect(secret.status).toBe(400);
    expect(secret.json<{ message: string }>().message).toMatch(
      /cannot be handled as a Secret: illegal base64 data at input byte 3/,
    );
  });
});

describe("controllers", () => {
  const KUBECONFIG =
    'apiVersion: v1\nclusters:\n- cluster:\n    server: https://10.0.0.1:6443\n  name: ""\ncontexts: null\ncurrent-context: ""\nkind: Config\npreferences: {}\nusers: null\n';

  /** The JWS written here from RFC 7515, apart from the simulation's own implementation. */
  function expectedJWS(content: string, id: string, secret: string): string {
    const header = Buffer.from(`{"alg":"HS256","kid":"${id}"}`).toString("base64url");
    const mac = createHmac("sha256", secret)
      .update(`${header}.${Buffer.from(content).toString("base64url")}`)
      .digest("base64url");
    return `${header}..${mac}`;
  }

  it("computes the JWS kubeadm's known-answer test expects", async () => {
    const { computeDetachedSignature } = await import("../../support/sim/apiserver/index.js");
    const content = "Hello from the other side. I must have called a thousand times.";
    expect(computeDetachedSignature(content, "joshua", "my voice is my passcode")).toBe(
      "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..VShe2taLd-YTrmWuRkcL_8QTNDHYxQIEBsAYYiIj1_8",
    );
    expect(computeDetachedSignature("", "joshua", "my voice is my passcode")).toBe(
      "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..7Ui1ALizW4jXphVUB7xUqC9vLYLL9RZeOFfVLoB7Tgk",
    );
  });

  it("BootstrapSigner signs cluster-info for signing tokens only, and TokenCleaner removes expired tokens", async () => {
    api.store.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "cluster-info", namespace: "kube-public" },
      data: { kubeconfig: KUBECONFIG },
    });
    api.store.create(tokenSecret("sign01", "aaaaaaaaaaaaaaaa", { expiration: rfc3339(1500) }));
    api.store.create(
      tokenSecret("nosign", "bbbbbbbbbbbbbbbb", { "usage-bootstrap-signing": "false" }),
    );
    const get = () =>
      api.store.get({
        apiVersion: "v1",
        kind: "ConfigMap",
        namespace: "kube-public",
        name: "cluster-info",
      })!;
    const data = await api.store.waitFor(
      () => {
        const d = get().data as Record<string, string>;
        return d["jws-kubeconfig-sign01"] ? d : undefined;
      },
      2000,
      "jws-kubeconfig-sign01",
    );
    expect(data["jws-kubeconfig-sign01"]).toBe(
      expectedJWS(KUBECONFIG, "sign01", "aaaaaaaaaaaaaaaa"),
    );
    expect(data).not.toHaveProperty("jws-kubeconfig-nosign");
    // An anonymous client reads it, as join discovery does (kubeadm's Role on cluster-info).
    api.store.create({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: "kubeadm:bootstrap-signer-clusterinfo", namespace: "kube-public" },
      rules: [
        {
          apiGroups: [""],
          resources: ["configmaps"],
          resourceNames: ["cluster-info"],
          verbs: ["get"],
        },
      ],
    });
    api.store.create({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "kubeadm:bootstrap-signer-clusterinfo", namespace: "kube-public" },
      roleRef: {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "Role",
        name: "kubeadm:bootstrap-signer-clusterinfo",
      },
      subjects: [{ kind: "User", apiGroup: "rbac.authorization.k8s.io", name: "system:anonymous" }],
    });
    const anon = await call("GET", "/api/v1/namespaces/kube-public/configmaps/cluster-info");
    expect(anon.json<{ data: Record<string, string> }>().data["jws-kubeconfig-sign01"]).toBe(
      data["jws-kubeconfig-sign01"],
    );
    // After expiry the token is deleted and its signature removed.
    await api.store.waitFor(
      () =>
        api.store.get({
          apiVersion: "v1",
          kind: "Secret",
          namespace: "kube-system",
          name: "bootstrap-token-sign01",
        })
          ? undefined
          : true,
      4000,
      "the expired token to be deleted",
    );
    await api.store.waitFor(
      () => ("jws-kubeconfig-sign01" in (get().data as object) ? undefined : true),
      2000,
      "the signature to go",
    );
  });

  it("approves a node client CSR made with a bootstrap token and signs it with the cluster CA", async () => {
    api.store.create(tokenSecret("join01", "cccccccccccccccc"));
    const { csr, key } = await makeCSR(dir, "kubelet", {
      cn: "system:node:worker1",
      orgs: ["system:nodes"],
    });
    const r = await call("POST", "/apis/certificates.k8s.io/v1/certificatesigningrequests", {
      token: "join01.cccccccccccccccc",
      body: {
        apiVersion: "certificates.k8s.io/v1",
        kind: "CertificateSigningRequest",
        metadata: { generateName: "csr-" },
        spec: {
          request: Buffer.from(await readFile(csr)).toString("base64"),
          signerName: "kubernetes.io/kube-apiserver-client-kubelet",
          usages: ["digital signature", "client auth"],
        },
      },
    });
    expect(r.status).toBe(201);
    const created = r.json<StoredObject>();
    expect((created.spec as { username: string }).username).toBe("system:bootstrap:join01");
    const name = created.metadata.name;
    const signed = await api.store.waitFor(
      () => {
        const o = api.store.get({
          apiVersion: "certificates.k8s.io/v1",
          kind: "CertificateSigningRequest",
          name,
        });
        return (o?.status as { certificate?: string } | undefined)?.certificate ? o : undefined;
      },
      5000,
      "the CSR to be signed",
    );
    expect((signed.status as { conditions: unknown[] }).conditions[0]).toMatchObject({
      type: "Approved",
      status: "True",
      reason: "AutoApproved",
      message: "Auto approving kubelet client certificate after SubjectAccessReview.",
    });
    const pem = Buffer.from(
      (signed.status as { certificate: string }).certificate,
      "base64",
    ).toString();
    const certPath = join(dir, "kubelet-signed.crt");
    await writeFile(certPath, pem);
    const verify = await run("openssl", ["verify", "-CAfile", ca.cert, certPath]);
    expect(verify.stdout.trim()).toBe(`${certPath}: OK`);
    const cert = new X509Certificate(pem);
    expect(cert.subject).toBe("O=system:nodes\nCN=system:node:worker1");
    const text = (await run("openssl", ["x509", "-in", certPath, "-noout", "-text"])).stdout;
    expect(text).toContain("TLS Web Client Authentication");
    expect(text).toMatch(/CA:FALSE/);
    const lifetime = Date.parse(cert.validTo) - Date.parse(cert.validFrom);
    expect(Math.abs(lifetime - 8760 * 3600_000)).toBeLessThan(2000); // 1y (backdated start and end)
    // The signed certificate now authenticates the node.
    fileCache.set(certPath, pem);
    fileCache.set(key, await readFile(key, "utf8"));
    const who = await call("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {
      as: { cert: certPath, key },
      body: { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
    });
    expect(who.json<{ status: { userInfo: unknown } }>().status.userInfo).toEqual({
      username: "system:node:worker1",
      groups: ["system:nodes", "system:authenticated"],
    });
  });

  it("leaves a CSR with the wrong subject unapproved, and the signer fails it if an admin approves", async () => {
    const { csr } = await makeCSR(dir, "bad", {
      cn: "system:node:worker2",
      orgs: ["system:masters"],
    });
    const created = api.store.create(
      {
        apiVersion: "certificates.k8s.io/v1",
        kind: "CertificateSigningRequest",
        metadata: { name: "bad-subject" },
        spec: {
          request: Buffer.from(await readFile(csr)).toString("base64"),
          signerName: "kubernetes.io/kube-apiserver-client-kubelet",
          usages: ["digital signature", "client auth"],
        },
      },
      {
        user: {
          username: "system:bootstrap:join01",
          groups: [
            "system:bootstrappers",
            "system:bootstrappers:kubeadm:default-node-token",
            "system:authenticated",
          ],
        },
      },
    );
    await new Promise((r) => setTimeout(r, 100));
    const pending = api.store.get({
      apiVersion: "certificates.k8s.io/v1",
      kind: "CertificateSigningRequest",
      name: "bad-subject",
    })!;
    expect(pending.status).toEqual({});
    const approval = await call(
      "PUT",
      "/apis/certificates.k8s.io/v1/certificatesigningrequests/bad-subject/approval",
      {
        as: admin,
        body: {
          ...created,
          status: {
            conditions: [{ type: "Approved", status: "True", reason: "Manual", message: "ok" }],
          },
        },
      },
    );
    expect(approval.status).toBe(200);
    const failed = await api.store.waitFor(
      () => {
        const o = api.store.get({
          apiVersion: "certificates.k8s.io/v1",
          kind: "CertificateSigningRequest",
          name: "bad-subject",
        })!;
        const conds =
          (o.status as { conditions?: { type: string; message?: string }[] }).conditions ?? [];
        return conds.find((c) => c.type === "Failed");
      },
      2000,
      "a Failed condition",
    );
    expect(failed.message).toBe("subject organization is not system:nodes");
  });

  it("publishes kube-root-ca.crt and the default ServiceAccount in new namespaces", async () => {
    api.store.create({ apiVersion: "v1", kind: "Namespace", metadata: { name: "fresh" } });
    const root = await api.store.waitFor(
      () =>
        api.store.get({
          apiVersion: "v1",
          kind: "ConfigMap",
          namespace: "fresh",
          name: "kube-root-ca.crt",
        }),
      2000,
      "kube-root-ca.crt",
    );
    expect((root.data as Record<string, string>)["ca.crt"]).toBe(caPem);
    await api.store.waitFor(
      () =>
        api.store.get({
          apiVersion: "v1",
          kind: "ServiceAccount",
          namespace: "fresh",
          name: "default",
        }),
      2000,
    );
  });
});

describe("discovery and kubectl", () => {
  it("serves kubectl get configmaps -A (Go client, discovery, server-side tables)", async () => {
    const kubeconfig = join(dir, "admin.conf");
    await writeFile(
      kubeconfig,
      [
        "apiVersion: v1",
        "kind: Config",
        "clusters:",
        "- name: sim",
        "  cluster:",
        `    server: ${api.url}`,
        `    certificate-authority: ${ca.cert}`,
        "users:",
        "- name: admin",
        "  user:",
        `    client-certificate: ${admin.cert}`,
        `    client-key: ${admin.key}`,
        "contexts:",
        "- name: sim",
        "  context: { cluster: sim, user: admin }",
        "current-context: sim",
        "",
      ].join("\n"),
    );
    const kubectl = (...args: string[]) =>
      run(
        "kubectl",
        ["--kubeconfig", kubeconfig, "--cache-dir", join(dir, "kube-cache"), ...args],
        {
          env: { ...process.env, HOME: dir },
        },
      );
    const { stdout } = await kubectl("get", "configmaps", "-A");
    const lines = stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^NAMESPACE\s+NAME\s+DATA\s+AGE$/);
    expect(lines.some((l) => /^sel\s+s2\s+1\s+\S+$/.test(l))).toBe(true);
    const ns = await kubectl("get", "ns", "kube-system", "-o", "jsonpath={.metadata.labels}");
    expect(ns.stdout).toContain('"kubernetes.io/metadata.name":"kube-system"');
    // JSON writes through kubectl's dynamic client (typed clientsets send protobuf: not simulated).
    await kubectl("label", "configmap", "s3", "-n", "sel", "checked=yes");
    const labelled = await kubectl(
      "get",
      "configmaps",
      "-n",
      "sel",
      "-l",
      "checked=yes",
      "-o",
      "name",
    );
    expect(labelled.stdout.trim()).toBe("configmap/s3");
    await kubectl("delete", "configmap", "s3", "-n", "sel");
    expect(
      api.store.get({ apiVersion: "v1", kind: "ConfigMap", namespace: "sel", name: "s3" }),
    ).toBeUndefined();
    const svc = await kubectl(
      "get",
      "svc",
      "kubernetes",
      "-n",
      "default",
      "-o",
      "jsonpath={.spec.clusterIP}",
    );
    expect(svc.stdout).toBe("10.96.0.1");
  });
});

describe("fault injection", () => {
  it("fails chosen requests a set number of times", async () => {
    api.faults.inject({
      method: "GET",
      pathPrefix: "/api/v1/namespaces/default/configmaps",
      times: 1,
      respond: { code: 503, message: "etcd is down" },
    });
    const first = await call("GET", "/api/v1/namespaces/default/configmaps", { as: admin });
    expect(first.status).toBe(503);
    expect(first.json()).toMatchObject({
      kind: "Status",
      reason: "ServiceUnavailable",
      message: "etcd is down",
      code: 503,
    });
    expect((await call("GET", "/api/v1/namespaces/default/configmaps", { as: admin })).status).toBe(
      200,
    );
  });

  it("drops the connection mid-request", async () => {
    api.faults.inject({ method: "POST", times: 1, respond: "drop" });
    await expect(
      call("POST", "/api/v1/namespaces/default/configmaps", {
        as: admin,
        body: cm("default", "dropped"),
      }),
    ).rejects.toThrow(/socket hang up|ECONNRESET/);
    expect(
      api.store.get({ apiVersion: "v1", kind: "ConfigMap", namespace: "default", name: "dropped" }),
    ).toBeUndefined();
  });

  it("reports /livez failure as kube-apiserver does", async () => {
    api.faults.setLivez(false);
    try {
      const r = await call("GET", "/livez", { as: admin });
      expect(r.status).toBe(500);
      expect(r.text).toContain("[-]etcd failed: reason withheld\n");
      expect(r.text.endsWith("livez check failed\n")).toBe(true);
    } finally {
      api.faults.clear();
    }
    const verbose = await call("GET", "/livez?verbose", { as: admin });
    expect(verbose.text).toMatch(/^\[\+\]ping ok\n[\s\S]*livez check passed\n$/);
  });
});

describe("stop", () => {
  it("ends every connection, one whose TLS handshake has not even begun too, as the process's exit does", async () => {
    const doomed = await anotherServer({ enableBootstrapTokenAuth: false });
    const { port } = new URL(doomed.url);
    // A client that connected and has not sent its ClientHello yet.
    const raw = connect(Number(port), "127.0.0.1");
    await once(raw, "connect");
    const closed = once(raw, "close");
    const stopped = doomed.stop().then(() => "stopped");
    const late = new Promise((r) => setTimeout(() => r("still waiting"), 5_000));
    expect(await Promise.race([stopped, late])).toBe("stopped");
    await closed;
    expect(raw.destroyed).toBe(true);
  });
});

describe("options from static pod commands", () => {
  it("reads kubeadm's kube-apiserver and kube-controller-manager flags", () => {
    const map = (p: string) => `/rootfs${p}`;
    const o = apiServerOptionsFromCommand(
      [
        "kube-apiserver",
        "--advertise-address=10.0.0.5",
        "--authorization-mode=Node,RBAC",
        "--client-ca-file=/etc/kubernetes/pki/ca.crt",
        "--enable-admission-plugins=NodeRestriction",
        "--enable-bootstrap-token-auth=true",
        "--secure-port=6443",
        "--service-cluster-ip-range=10.96.0.0/12",
        "--tls-cert-file=/etc/kubernetes/pki/apiserver.crt",
        "--tls-private-key-file=/etc/kubernetes/pki/apiserver.key",
      ],
      map,
    );
    expect(o).toMatchObject({
      bindAddress: "0.0.0.0",
      securePort: 6443,
      advertiseAddress: "10.0.0.5",
      clientCAFile: "/rootfs/etc/kubernetes/pki/ca.crt",
      tlsCertFile: "/rootfs/etc/kubernetes/pki/apiserver.crt",
      enableBootstrapTokenAuth: true,
      anonymousAuth: true,
      authorizationModes: ["Node", "RBAC"],
      serviceClusterIPRange: "10.96.0.0/12",
    });
    const c = controllersOptionsFromCommand(
      [
        "kube-controller-manager",
        "--cluster-signing-cert-file=/etc/kubernetes/pki/ca.crt",
        "--cluster-signing-key-file=/etc/kubernetes/pki/ca.key",
        "--controllers=*,bootstrapsigner,tokencleaner",
        "--cluster-signing-duration=720h0m0s",
      ],
      map,
    );
    expect(c).toEqual({
      clusterSigningCertFile: "/rootfs/etc/kubernetes/pki/ca.crt",
      clusterSigningKeyFile: "/rootfs/etc/kubernetes/pki/ca.key",
      controllers: ["*", "bootstrapsigner", "tokencleaner"],
      clusterSigningDuration: 720 * 3600_000,
    });
    expect(() => apiServerOptionsFromCommand(["kube-apiserver"], map)).toThrow(/--tls-cert-file/);
  });

  it("enables controllers as --controllers does (bootstrapsigner and tokencleaner only when named)", () => {
    expect(isControllerEnabled("bootstrapsigner", ["*"])).toBe(false);
    expect(isControllerEnabled("bootstrapsigner", ["*", "bootstrapsigner"])).toBe(true);
    expect(isControllerEnabled("bootstrapsigner", ["*", "bootstrap-signer-controller"])).toBe(true);
    expect(isControllerEnabled("csrsigning", ["*", "-csrsigning"])).toBe(false);
    expect(isControllerEnabled("csrapproving", ["bootstrapsigner"])).toBe(false);
    expect(isControllerEnabled("garbagecollector", ["*"])).toBe(true);
  });

  it("stores independently when no store is shared", () => {
    const s = new ObjectStore();
    expect(s.list("v1", "Namespace").map((n) => n.metadata.name)).toEqual([
      "default",
      "kube-node-lease",
      "kube-public",
      "kube-system",
    ]);
  });
});
