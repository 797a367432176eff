import { existsSync } from "node:fs";
import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
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
// The cluster is dual-stack, IPv6 first: every testbed host has an IPv4 and an IPv6 address.

let bed: SshTestbed;
let r: Runner;
let kubeconfig: string;

/** Dual-stack ranges, IPv6 first: the cluster's primary family is IPv6. */
const DUAL_NETWORKING =
  'networking: {podSubnet: "fd00:10:244::/56,10.244.0.0/16", serviceSubnet: "fd00:10:96::/112,10.96.0.0/16"}';

const withCni = (cni: string, storage?: string) =>
  clusterFile({
    name: "ci",
    controlPlanes: [bed.host("cp-1")],
    workers: [bed.host("w-1")],
  })
    .replace(
      "prepare: {enabled: false}",
      `cni: ${cni}\n${storage ? `storage: ${storage}\n` : ""}${DUAL_NETWORKING}\nprepare: {enabled: false}`,
    )
    // cp-1's addresses are detected; w-1's IPv4 address is given, its IPv6 partner detected.
    .replace(
      "{name: w-1, role: worker,",
      `{name: w-1, role: worker, address: "${bed.host("w-1").address}",`,
    )
    // Certificates outside /etc/kubernetes/pki: up pins joins to admin.conf's CA, as kubeadm.
    .concat(
      "---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\ncertificatesDir: /etc/kubernetes/custom-pki\n",
    );

beforeAll(async () => {
  bed = await createTestbed(["cp-1", "w-1"], { ssh: true, ipv6: true });
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

  // kubeadm docs, "Dual-stack support with kubeadm": kubeletExtraArgs node-ip "<IP>,<IP>" on
  // every node (init and join); kind orders the pair by the first service range's family
  // (pkg/cluster/internal/create/actions/config/config.go) and advertises its first address, the
  // family kube-apiserver requires (validatePublicIPServiceClusterIPRangeIPFamilies). etcd's URLs
  // with an IPv6 advertise address: kubeadm's phases/etcd/local.go (fact sheet §4.6).
  it("dual-stack, IPv6 first: each node's node-ip pair, IPv6 advertised, etcd and admin.conf on IPv6", async () => {
    const cp1 = bed.host("cp-1");
    const w1 = bed.host("w-1");
    const v6 = (h: typeof cp1) => h.address6!;
    // The kubelet's flags as kubeadm writes them: the pair, IPv6 first.
    for (const h of [cp1, w1]) {
      const flags = await readFile(h.path("var/lib/kubelet/kubeadm-flags.env"), "utf8");
      expect(flags, h.name).toContain(`--node-ip=${v6(h)},${h.address}`);
    }
    const manifest = (name: string) =>
      readFile(cp1.path(`etc/kubernetes/manifests/${name}.yaml`), "utf8");
    const apiserver = await manifest("kube-apiserver");
    expect(apiserver).toContain(`--advertise-address=${v6(cp1)}`);
    expect(apiserver).toContain("--service-cluster-ip-range=fd00:10:96::/112,10.96.0.0/16");
    expect(apiserver).toContain("--etcd-servers=https://[::1]:2379");
    const etcd = await manifest("etcd");
    for (const flag of [
      `--advertise-client-urls=https://[${v6(cp1)}]:2379`,
      `--initial-advertise-peer-urls=https://[${v6(cp1)}]:2380`,
      `--listen-client-urls=https://[::1]:2379,https://[${v6(cp1)}]:2379`,
      `--listen-peer-urls=https://[${v6(cp1)}]:2380`,
    ]) {
      expect(etcd).toContain(flag);
    }
    // admin.conf names cp-1's IPv6 address, bracketed; real kubectl reaches the API through it.
    expect(await readFile(kubeconfig, "utf8")).toContain(`server: https://[${v6(cp1)}]:6443`);
    const nodes = await r.kubectl<{
      items: {
        metadata: { name: string };
        status: { addresses: { type: string; address: string }[] };
      }[];
    }>(kubeconfig, ["get", "nodes"]);
    const internal = Object.fromEntries(
      nodes.items.map((n) => [
        n.metadata.name,
        n.status.addresses.filter((a) => a.type === "InternalIP").map((a) => a.address),
      ]),
    );
    expect(internal).toEqual({
      "cp-1": [v6(cp1), cp1.address],
      "w-1": [v6(w1), w1.address],
    });
    // The ranges kubeadm stored, as given.
    const config = await r.kubectl<{ data: { ClusterConfiguration: string } }>(kubeconfig, [
      "-n",
      "kube-system",
      "get",
      "configmap",
      "kubeadm-config",
    ]);
    expect(config.data.ClusterConfiguration).toContain(
      "serviceSubnet: fd00:10:96::/112,10.96.0.0/16",
    );
  }, 60_000);

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
