import { existsSync } from "node:fs";
import { mkdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CNI_MANIFEST, CNI_MANIFEST_OBJECTS } from "../../support/cni-manifest.js";
import { createTestbed, type SshTestbed } from "../../support/testbed.js";
import {
  clusterFile,
  diagnostics,
  eventually,
  nodeReadiness,
  runner,
  type Runner,
} from "./support.js";

// The pod network choices of `kubeforge up` over real SSH against the simulated control plane:
// `cni: none` ends as soon as the API answers and every node registered (the nodes NotReady, as
// a real kubelet reports them without a CNI) and hands out admin.conf, so a later step can
// install a network; then `up` again with `cni: <manifest>` applies a manifest of kinds beyond
// kubeforge's own (a CRD and its custom resource, a PodDisruptionBudget...) to that cluster.
// The first run has `storage: none` (no StorageClass), the second the default: the local-path
// provisioner's objects and the default StorageClass, applied after the pod network.

let bed: SshTestbed;
let r: Runner;
let kubeconfig: string;

const withCni = (cni: string, storage?: string) =>
  clusterFile({
    name: "ci",
    controlPlanes: [bed.host("cp-1")],
    workers: [bed.host("w-1")],
  })
    .replace(
      "prepare: {enabled: false}",
      `cni: ${cni}\n${storage ? `storage: ${storage}\n` : ""}prepare: {enabled: false}`,
    )
    // Certificates outside /etc/kubernetes/pki: up pins joins to admin.conf's CA, as kubeadm.
    .concat(
      "---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\ncertificatesDir: /etc/kubernetes/custom-pki\n",
    );

beforeAll(async () => {
  bed = await createTestbed(["cp-1", "w-1"], { ssh: true });
  r = await runner();
  kubeconfig = join(r.dir, "admin.conf");
}, 120_000);

afterAll(async () => {
  await bed?.stop();
}, 120_000);

describe("kubeforge up: the pod network", () => {
  it("cni: none ends with every node registered NotReady, and admin.conf written", async () => {
    const path = await r.writeClusterFile(withCni("none", "none"));
    const result = await r.kubeforge(["up", "-f", path, "--kubeconfig", kubeconfig]);
    if (result.code !== 0) throw new Error(await diagnostics(bed, result));
    expect(result.stdout.trim()).toBe(kubeconfig);
    expect((await stat(kubeconfig)).mode & 0o777).toBe(0o600);
    expect(result.stderr).toMatch(/NotReady .*until .*(pod network|CNI)/);
    // Registered, and NotReady: no CNI configuration on the nodes.
    expect(await nodeReadiness(r, kubeconfig)).toEqual({ "cp-1": "False", "w-1": "False" });
    // The certificates where ClusterConfiguration put them; w-1 joined pinned to that CA.
    const cp1 = bed.host("cp-1");
    expect(existsSync(cp1.path("etc/kubernetes/custom-pki/ca.crt"))).toBe(true);
    expect(existsSync(cp1.path("etc/kubernetes/pki"))).toBe(false);
    const coredns = await r.kubectl<{ status?: { availableReplicas?: number } }>(kubeconfig, [
      "-n",
      "kube-system",
      "get",
      "deployment",
      "coredns",
    ]);
    expect(coredns.status?.availableReplicas ?? 0).toBe(0);
    // storage: none: no StorageClass, nothing of the provisioner.
    const classes = await r.kubectl<{ items: unknown[] }>(kubeconfig, ["get", "storageclasses"]);
    expect(classes.items).toEqual([]);
    const namespaces = await r.kubectl<{ items: { metadata: { name: string } }[] }>(kubeconfig, [
      "get",
      "namespaces",
    ]);
    expect(namespaces.items.map((n) => n.metadata.name)).not.toContain("local-path-storage");
    expect(result.stderr).not.toMatch(/\[up\] storage:/);
  }, 420_000);

  it("the nodes turn Ready once the user's network writes its CNI configuration", async () => {
    // What a CNI's node agent does once it runs: its configuration in /etc/cni/net.d.
    const conflist = JSON.stringify({
      cniVersion: "1.0.0",
      name: "user-net",
      plugins: [{ type: "bridge", bridge: "cni0" }],
    });
    for (const h of bed.hosts) {
      await mkdir(h.path("etc/cni/net.d"), { recursive: true });
      await writeFile(h.path("etc/cni/net.d/10-user-net.conflist"), conflist);
    }
    await eventually(
      "both nodes Ready",
      async () => {
        expect(await nodeReadiness(r, kubeconfig)).toEqual({ "cp-1": "True", "w-1": "True" });
      },
      90_000,
    );
  }, 120_000);

  it("cni: <manifest> applies objects of any kind, a custom resource after its CRD", async () => {
    const manifest = join(r.dir, "net.yaml");
    await writeFile(manifest, CNI_MANIFEST);
    const path = await r.writeClusterFile(withCni(manifest));
    const result = await r.kubeforge(["up", "-f", path, "--kubeconfig", kubeconfig]);
    if (result.code !== 0) throw new Error(await diagnostics(bed, result));
    expect(result.stderr).toContain(`applied ${CNI_MANIFEST_OBJECTS} objects from ${manifest}`);
    // The default storage, after the pod network: the default StorageClass and its provisioner.
    const cniAt = result.stderr.indexOf(`applied ${CNI_MANIFEST_OBJECTS} objects`);
    const storageAt = result.stderr.indexOf("[up] storage: StorageClass local-path (the default)");
    expect(storageAt, result.stderr).toBeGreaterThan(cniAt);
    const sc = await r.kubectl<{
      metadata: { annotations: Record<string, string> };
      provisioner: string;
      volumeBindingMode: string;
    }>(kubeconfig, ["get", "storageclass", "local-path"]);
    expect(sc.metadata.annotations["storageclass.kubernetes.io/is-default-class"]).toBe("true");
    expect(sc.provisioner).toBe("rancher.io/local-path");
    expect(sc.volumeBindingMode).toBe("WaitForFirstConsumer");
    const provisioner = await r.kubectl<{
      spec: { template: { spec: { containers: { image: string }[] } } };
    }>(kubeconfig, ["-n", "local-path-storage", "get", "deployment", "local-path-provisioner"]);
    expect(provisioner.spec.template.spec.containers[0]!.image).toBe(
      "docker.io/rancher/local-path-provisioner:v0.0.37",
    );
    // Read back with kubectl, which finds the custom resource through the server's discovery.
    const pool = await r.kubectl<{ spec: { cidr: string } }>(kubeconfig, [
      "get",
      "ippools.net.example.com",
      "default-pool",
    ]);
    expect(pool.spec.cidr).toBe("10.244.0.0/16");
    const crd = await r.kubectl<{ status: { conditions: { type: string; status: string }[] } }>(
      kubeconfig,
      ["get", "crd", "ippools.net.example.com"],
    );
    expect(crd.status.conditions).toContainEqual(
      expect.objectContaining({ type: "Established", status: "True" }),
    );
    const pdb = await r.kubectl<{ spec: { maxUnavailable: number } }>(kubeconfig, [
      "-n",
      "test-net",
      "get",
      "pdb",
      "net-controller",
    ]);
    expect(pdb.spec.maxUnavailable).toBe(1);
    for (const [ns, kind, name] of [
      ["test-net", "serviceaccount", "net-node"],
      ["", "clusterrole", "net-node"],
      ["", "clusterrolebinding", "net-node"],
      ["test-net", "daemonset", "net-node"],
    ] as const) {
      const obj = await r.kubectl<{ metadata: { name: string } }>(kubeconfig, [
        ...(ns ? ["-n", ns] : []),
        "get",
        kind,
        name,
      ]);
      expect(obj.metadata.name).toBe(name);
    }
  }, 420_000);

  it("a manifest that is not valid YAML is refused naming the file and document, nothing applied", async () => {
    const manifest = join(r.dir, "broken.yaml");
    await writeFile(
      manifest,
      "apiVersion: v1\nkind: Namespace\nmetadata: {name: never-created}\n---\nkind: ConfigMap\nmetadata: {name: x, namespace: default}\n",
    );
    const path = await r.writeClusterFile(withCni(manifest), "broken-cluster.yaml");
    const result = await r.kubeforge(["up", "-f", path, "--kubeconfig", kubeconfig]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(`${manifest}: document 2`);
    expect(result.stderr).toContain("apiVersion");
    await expect(r.kubectl(kubeconfig, ["get", "namespace", "never-created"])).rejects.toThrow(
      /NotFound|not found/,
    );
  }, 420_000);
});
