import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadManifest, parseManifest } from "../../../src/cluster/up/cni-manifest.js";
import { applyObjects } from "../../../src/kube/apply.js";
import { kubeClientFromKubeConfig } from "../../../src/kube/client.js";
import { UnservedKindError } from "../../../src/kube/errors.js";
import type { KubeClient, KubeObject } from "../../../src/kube/types.js";
import { CNI_MANIFEST, CNI_MANIFEST_OBJECTS } from "../../support/cni-manifest.js";
import { startReleaseServer, type ReleaseServer } from "../../support/release-server.js";
import {
  startInProcessControlPlane,
  type InProcessControlPlane,
} from "../../support/sim-control-plane.js";

// `cni: <manifest>` against the simulated API server: objects of any kind applied through the
// server's discovery, a custom resource after its CRD is Established, a second apply changing
// only what changed; and the manifest's download from a local HTTPS server, whose failures name
// the URL.

let cp: InProcessControlPlane;
let client: KubeClient;
let files: ReleaseServer;

beforeAll(async () => {
  cp = await startInProcessControlPlane();
  client = await kubeClientFromKubeConfig(
    await readFile(join(cp.root, "etc/kubernetes/super-admin.conf"), "utf8"),
    { description: "super-admin.conf" },
  );
  files = await startReleaseServer();
}, 60_000);

afterAll(async () => {
  await cp?.stop();
  await files?.close();
});

const CRD_REF = {
  apiVersion: "apiextensions.k8s.io/v1",
  kind: "CustomResourceDefinition",
  name: "ippools.net.example.com",
};

describe("the simulated API server and CustomResourceDefinitions", () => {
  it("serves a custom resource only once its CRD's names are accepted, in discovery once Established", async () => {
    const crd = parseManifest(CNI_MANIFEST, "fixture").find((o) => o.kind === CRD_REF.kind)!;
    const widget = structuredClone(crd);
    widget.metadata.name = "widgets.test.example.com";
    Object.assign(widget.spec as object, {
      group: "test.example.com",
      names: { plural: "widgets", kind: "Widget" },
      scope: "Namespaced",
    });
    // Before the naming controller has accepted its names: not served, not discovered.
    const release = cp.api.holdCrdControllers();
    try {
      await client.create(widget);
      expect(
        (await client.getRaw("/apis/test.example.com/v1/namespaces/default/widgets")).status,
      ).toBe(404);
      await expect(client.resource("test.example.com/v1", "Widget")).rejects.toBeInstanceOf(
        UnservedKindError,
      );
    } finally {
      release();
    }
    const established = await cp.api.store.waitFor(
      () => {
        const o = cp.api.store.get({ ...CRD_REF, name: "widgets.test.example.com" });
        const conds = (o?.status as { conditions?: { type: string; status: string }[] })
          ?.conditions;
        return conds?.find((c) => c.type === "Established" && c.status === "True") ? o : undefined;
      },
      5000,
      "the CRD to be Established",
    );
    expect(established.status).toMatchObject({
      acceptedNames: {
        plural: "widgets",
        kind: "Widget",
        singular: "widget",
        listKind: "WidgetList",
      },
      storedVersions: ["v1"],
    });
    expect(await client.resource("test.example.com/v1", "Widget")).toEqual({
      kind: "Widget",
      group: "test.example.com",
      version: "v1",
      plural: "widgets",
      namespaced: true,
    });
    const groups = JSON.parse((await client.getRaw("/apis")).body) as {
      groups: { name: string }[];
    };
    expect(groups.groups.map((g) => g.name)).toContain("test.example.com");
    await client.delete({ ...CRD_REF, name: "widgets.test.example.com" });
    expect((await client.getRaw("/apis/test.example.com/v1")).status).toBe(404);
  });

  it("refuses a CRD whose name is not <plural>.<group>", async () => {
    const crd = parseManifest(CNI_MANIFEST, "fixture").find((o) => o.kind === CRD_REF.kind)!;
    crd.metadata.name = "pools.net.example.com";
    await expect(client.create(crd)).rejects.toThrow(
      /422 .*must be spec.names.plural\+"."\+spec.group/,
    );
  });
});

describe("applyObjects", () => {
  const stored = (o: KubeObject) =>
    client.get({
      apiVersion: o.apiVersion,
      kind: o.kind,
      name: o.metadata.name,
      ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}),
    });

  it("applies every kind of a CNI manifest, the custom resource after its CRD is Established", async () => {
    const objects = parseManifest(CNI_MANIFEST, "fixture");
    expect(objects).toHaveLength(CNI_MANIFEST_OBJECTS);
    const lines: string[] = [];
    const { applied } = await applyObjects(client, objects, {
      timeoutMs: 20_000,
      log: (l) => lines.push(l),
    });
    expect(applied.map((o) => o.kind)).toEqual([
      "Namespace",
      "CustomResourceDefinition",
      "IPPool",
      "PodDisruptionBudget",
      "ServiceAccount",
      "ClusterRole",
      "ClusterRoleBinding",
      "DaemonSet",
    ]);
    expect(lines).toContain(
      "waiting for the CustomResourceDefinition ippools.net.example.com to be Established",
    );
    for (const o of objects) {
      const back = await stored(o);
      expect(back.metadata.uid, `${o.kind} ${o.metadata.name}`).toBeTruthy();
    }
    const pool = await client.get({
      apiVersion: "net.example.com/v1",
      kind: "IPPool",
      name: "default-pool",
    });
    expect(pool.spec).toEqual({ cidr: "10.244.0.0/16" });
  });

  it("applied again, replaces only what changed and keeps the rest as stored", async () => {
    const objects = parseManifest(CNI_MANIFEST, "fixture");
    const before = await Promise.all(objects.map(stored));
    const changed = objects.map((o) =>
      o.kind === "IPPool" ? { ...o, spec: { cidr: "10.245.0.0/16" } } : o,
    );
    await applyObjects(client, changed, { timeoutMs: 20_000 });
    const after = await Promise.all(objects.map(stored));
    after.forEach((o, i) => {
      if (o.kind === "IPPool") {
        expect(o.spec).toEqual({ cidr: "10.245.0.0/16" });
        expect(o.metadata.resourceVersion).not.toBe(before[i]!.metadata.resourceVersion);
      } else {
        expect(o.metadata.resourceVersion, o.kind).toBe(before[i]!.metadata.resourceVersion);
      }
    });
  });

  it("puts a namespaced object without a namespace in default, as kubectl does", async () => {
    await applyObjects(
      client,
      parseManifest(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: net-conf}\ndata: {a: b}\n",
        "x",
      ),
      { timeoutMs: 5000 },
    );
    const cm = await client.get({
      apiVersion: "v1",
      kind: "ConfigMap",
      name: "net-conf",
      namespace: "default",
    });
    expect(cm.data).toEqual({ a: "b" });
  });

  it("names the object and says the kind is not served when no CRD defines it", async () => {
    const objects = parseManifest(
      "apiVersion: other.example.com/v1\nkind: Gadget\nmetadata: {name: g}\n",
      "x",
    );
    const started = Date.now();
    await expect(applyObjects(client, objects, { timeoutMs: 20_000 })).rejects.toThrow(
      /applying Gadget g \(other.example.com\/v1\): .*does not serve kind "Gadget" in apiVersion "other.example.com\/v1"/,
    );
    // Not retried until the timeout: no retry can make it served.
    expect(Date.now() - started).toBeLessThan(5000);
  });
});

describe("loadManifest from a URL", () => {
  const download = () => ({ ca: files.ca, retries: 0, timeoutMs: 2000 });

  it("downloads and parses a manifest", async () => {
    files.put("/cni/net.yaml", Buffer.from(CNI_MANIFEST));
    const objects = await loadManifest(`${files.url}/cni/net.yaml`, { download: download() });
    expect(objects).toHaveLength(CNI_MANIFEST_OBJECTS);
  });

  it.each([
    { fault: "not-found" as const, want: /HTTP 404/ },
    { fault: "html" as const, want: /is an HTML page, not a YAML manifest/ },
    { fault: "hang" as const, want: /no data for 2000 ms/ },
  ])("a $fault answer is an error naming the URL", async ({ fault, want }) => {
    const url = `${files.url}/cni/${fault}.yaml`;
    files.put(`/cni/${fault}.yaml`, Buffer.from(CNI_MANIFEST));
    files.fault(`/cni/${fault}.yaml`, fault);
    const error = await loadManifest(url, { download: download() }).catch((e: Error) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toContain(url);
    expect((error as Error).message).toMatch(want);
  });

  it("a download that is not YAML is refused naming the URL", async () => {
    files.put(
      "/cni/binary.yaml",
      Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x00, 0x09, 0x3a]),
    );
    const url = `${files.url}/cni/binary.yaml`;
    await expect(loadManifest(url, { download: download() })).rejects.toThrow(
      new RegExp(`the CNI manifest ${url.replace(/[.]/g, "\\.")}: document 1 `),
    );
  });
});
