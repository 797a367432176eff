import { execFileSync } from "node:child_process";
import { loadAll } from "js-yaml";
import { describe, expect, it } from "vitest";
import { DryRunClusterAccess, DryRunKubeClient } from "../../../src/kube/dry-run.js";
import { isAlreadyExists, isNotFound } from "../../../src/kube/errors.js";
import { createOrRetain, createOrUpdate, patchNode } from "../../../src/kube/idempotency.js";
import type { KubeObject } from "../../../src/kube/types.js";

const fast = { timeoutMs: 1000, intervalMs: 5 };

function recorder() {
  const chunks: string[] = [];
  const logs: string[] = [];
  const access = new DryRunClusterAccess(
    (t) => chunks.push(t),
    (l) => logs.push(l),
  );
  return { access, output: () => chunks.join(""), logs };
}

const tokenSecret: KubeObject = {
  apiVersion: "v1",
  kind: "Secret",
  type: "bootstrap.kubernetes.io/token",
  metadata: { name: "bootstrap-token-abcdef", namespace: "kube-system" },
  stringData: { "token-id": "abcdef", "usage-bootstrap-signing": "true" },
};

describe("DryRunKubeClient", () => {
  it("prints each write as a YAML document after a `# VERB path` comment", async () => {
    const { access, output } = recorder();
    const client = await access.clientFor("/etc/kubernetes/admin.conf");
    await client.create(tokenSecret);
    expect(output()).toBe(
      [
        "---",
        "# CREATE /api/v1/namespaces/kube-system/secrets",
        "apiVersion: v1",
        "kind: Secret",
        "metadata:",
        "  name: bootstrap-token-abcdef",
        "  namespace: kube-system",
        "stringData:",
        "  token-id: abcdef",
        '  usage-bootstrap-signing: "true"',
        "type: bootstrap.kubernetes.io/token",
        "",
      ].join("\n"),
    );
  });

  it("remembers writes: reads see them, a create returns a uid for owner references, re-creates conflict", async () => {
    const { access } = recorder();
    const client = await access.clientFor("/etc/kubernetes/admin.conf");
    const created = await client.create(tokenSecret);
    expect(created.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    const read = await client.get({
      apiVersion: "v1",
      kind: "Secret",
      name: "bootstrap-token-abcdef",
      namespace: "kube-system",
    });
    expect(read.metadata.uid).toBe(created.metadata.uid);
    await expect(client.create(tokenSecret)).rejects.toSatisfy(isAlreadyExists);
    // Another kubeconfig sees the same recorded cluster.
    const other = await access.clientFor("/etc/kubernetes/super-admin.conf");
    expect(
      (await other.list("v1", "Secret", { namespace: "kube-system" })).map((s) => s.metadata.name),
    ).toEqual(["bootstrap-token-abcdef"]);
  });

  it("updates a remembered object on a matching or zero resourceVersion, conflicts otherwise", async () => {
    // A zero resourceVersion is no precondition (kube-apiserver's storage); kubeadm's kube-dns
    // Service carries "0" so its update replaces whatever is there.
    const client = new DryRunKubeClient(() => undefined);
    const cm: KubeObject = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "x", namespace: "kube-system", resourceVersion: "41" },
      data: { a: "1" },
    };
    client.remember(cm);
    await expect(
      client.update({ ...cm, metadata: { ...cm.metadata, resourceVersion: "7" } }),
    ).rejects.toThrow(/409 Conflict/);
    const zero = await client.update({ ...cm, metadata: { ...cm.metadata, resourceVersion: "0" } });
    const matching = await client.update({
      ...cm,
      metadata: { ...zero.metadata },
      data: { a: "2" },
    });
    expect(matching.data).toEqual({ a: "2" });
  });

  it("answers NotFound for anything never written, except Nodes", async () => {
    const client = new DryRunKubeClient(() => {});
    const e = await client
      .get({ apiVersion: "v1", kind: "ConfigMap", name: "cluster-info", namespace: "kube-public" })
      .catch((x: unknown) => x);
    expect(isNotFound(e)).toBe(true);
    expect((e as Error).message).toBe(
      'getting ConfigMap kube-public/cluster-info: 404 Not Found: configmaps "cluster-info" not found',
    );
    const node = await client.get({ apiVersion: "v1", kind: "Node", name: "cp-1" });
    expect(node.metadata.labels).toEqual({ "kubernetes.io/hostname": "cp-1" });
  });

  it("prints mark-control-plane's PATCH against the stand-in Node", async () => {
    const { access, output } = recorder();
    const client = await access.clientFor("/etc/kubernetes/admin.conf");
    const patched = await patchNode(
      client,
      "cp-1",
      (node) => {
        node.metadata.labels = {
          ...node.metadata.labels,
          "node-role.kubernetes.io/control-plane": "",
        };
        node.spec = {
          taints: [{ key: "node-role.kubernetes.io/control-plane", effect: "NoSchedule" }],
        };
      },
      fast,
    );
    expect(output()).toBe(
      [
        "---",
        "# PATCH /api/v1/nodes/cp-1",
        "apiVersion: v1",
        "kind: Node",
        "metadata:",
        "  labels:",
        '    node-role.kubernetes.io/control-plane: ""',
        "  name: cp-1",
        "spec:",
        "  taints:",
        "  - effect: NoSchedule",
        "    key: node-role.kubernetes.io/control-plane",
        "",
      ].join("\n"),
    );
    expect(patched.metadata.labels).toEqual({
      "kubernetes.io/hostname": "cp-1",
      "node-role.kubernetes.io/control-plane": "",
    });
  });

  it("logs raw GETs and probes on the log, never on the output", async () => {
    const { access, output, logs } = recorder();
    const client = await access.clientFor("/etc/kubernetes/admin.conf");
    expect(await client.getRaw("/livez")).toEqual({ status: 200, body: "ok" });
    expect(await access.probe("http://127.0.0.1:10248/healthz", { timeoutMs: 10 })).toEqual({
      status: 200,
      body: "ok",
    });
    expect(logs).toEqual([
      "[dryrun] Would GET /livez",
      "[dryrun] Would GET http://127.0.0.1:10248/healthz",
    ]);
    expect(output()).toBe("");
  });

  it("writes a stream js-yaml and kubectl (Kubernetes' own parser) both read back", async () => {
    const { access, output } = recorder();
    const client = await access.clientFor("/etc/kubernetes/admin.conf");
    const cm: KubeObject = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "kubeadm-config", namespace: "kube-system" },
      data: {
        ClusterConfiguration: "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n",
        mode: "0644",
        on: "yes",
      },
    };
    await createOrUpdate(client, cm, fast);
    await createOrUpdate(client, { ...cm, data: { ClusterConfiguration: "changed\n" } }, fast);
    await createOrRetain(
      client,
      { ...cm, metadata: { name: "cluster-info", namespace: "kube-public" } },
      fast,
    );
    await client.create({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: "kubeadm:get-nodes" },
      roleRef: {
        apiGroup: "rbac.authorization.k8s.io",
        kind: "ClusterRole",
        name: "kubeadm:get-nodes",
      },
      subjects: [{ kind: "Group", name: "system:bootstrappers:kubeadm:default-node-token" }],
    });
    await patchNode(
      client,
      "cp-1",
      (n) => {
        n.metadata.labels = { ...n.metadata.labels, x: "" };
      },
      fast,
    );
    await client.delete({
      apiVersion: "v1",
      kind: "Secret",
      name: "bootstrap-token-old",
      namespace: "kube-system",
    });
    const text = output();
    expect(text.split("\n").filter((l) => l.startsWith("# "))).toEqual([
      "# CREATE /api/v1/namespaces/kube-system/configmaps",
      "# UPDATE /api/v1/namespaces/kube-system/configmaps/kubeadm-config",
      "# CREATE /api/v1/namespaces/kube-public/configmaps",
      "# CREATE /apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
      "# PATCH /api/v1/nodes/cp-1",
      "# DELETE /api/v1/namespaces/kube-system/secrets/bootstrap-token-old",
    ]);
    const docs = loadAll(text) as KubeObject[];
    expect(docs.map((d) => `${d.kind}/${d.metadata.name}`)).toEqual([
      "ConfigMap/kubeadm-config",
      "ConfigMap/kubeadm-config",
      "ConfigMap/cluster-info",
      "ClusterRoleBinding/kubeadm:get-nodes",
      "Node/cp-1",
      "Secret/bootstrap-token-old",
    ]);
    expect(docs[0]!.data).toEqual(cm.data);

    const json = execFileSync(
      "kubectl",
      ["label", "--local", "-f", "-", "checked=yes", "-o", "json"],
      { input: text, encoding: "utf8" },
    );
    const objects = JSON.parse(`[${json.replace(/}\n{/g, "},{")}]`) as KubeObject[];
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(
      docs.map((d) => `${d.kind}/${d.metadata.name}`),
    );
    // Kubernetes' YAML 1.1 reading keeps "0644" and "yes" strings.
    expect(objects[0]!.data).toEqual(cm.data);
  });
});

describe("DryRunKubeClient patches", () => {
  it("prints removals (null) as sent and applies them to what it remembers", async () => {
    const chunks: string[] = [];
    const client = new DryRunKubeClient((t) => chunks.push(t));
    const ref = { apiVersion: "v1", kind: "Node", name: "cp-1" };
    const patched = await client.patch(
      ref,
      { metadata: { labels: { "kubernetes.io/hostname": null, a: "" } } },
      "strategic",
    );
    expect(chunks.join("")).toBe(
      [
        "---",
        "# PATCH /api/v1/nodes/cp-1",
        "apiVersion: v1",
        "kind: Node",
        "metadata:",
        "  labels:",
        '    a: ""',
        "    kubernetes.io/hostname: null",
        "  name: cp-1",
        "",
      ].join("\n"),
    );
    expect(patched.metadata.labels).toEqual({ a: "" });
    expect((await client.get(ref)).metadata.labels).toEqual({ a: "" });
  });

  it("applies JSON patches to remembered objects and refuses unknown ones", async () => {
    const client = new DryRunKubeClient(() => {});
    const ref = { apiVersion: "v1", kind: "ConfigMap", name: "c", namespace: "kube-system" };
    await expect(client.patch(ref, [], "json")).rejects.toSatisfy(isNotFound);
    await client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "c", namespace: "kube-system" },
      data: { a: "1" },
    });
    const result = await client.patch(
      ref,
      [{ op: "replace", path: "/data/a", value: "2" }],
      "json",
    );
    expect(result.data).toEqual({ a: "2" });
  });
});
