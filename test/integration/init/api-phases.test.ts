import { createDecipheriv } from "node:crypto";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { InitConfig } from "../../../src/config/types.js";
import { NodeClusterAccess } from "../../../src/kube/access.js";
import { kubeClientFromKubeConfig } from "../../../src/kube/client.js";
import type { KubeClient, KubeObject } from "../../../src/kube/types.js";
import type { InitData } from "../../../src/phases/init/data.js";
import {
  baseInitConfig,
  runPhase,
  tempRootHost,
  testInitData,
  testRelease,
} from "../../support/init-fixtures.js";
import type { FakeApiServer } from "../../support/sim/apiserver/index.js";
import { initPhase, startInProcessControlPlane } from "../../support/sim-control-plane.js";

// The init phases that talk to the API, run one by one against a cluster. By default the
// cluster is the simulated control plane (test/support/sim), started in this process so that
// faults can be injected; with KUBEFORGE_E2E_KUBECONFIG (an admin.conf of a real, disposable
// kubeadm-compatible cluster, its CA key files next to it in ../pki when upload-certs should
// be checked) the same phase tests run against that cluster instead. Fault tests need the
// simulation and are skipped there.

const E2E_KUBECONFIG = process.env.KUBEFORGE_E2E_KUBECONFIG;
const CERTIFICATE_KEY = "1f".repeat(32);
const phase = initPhase;

interface Target {
  root: string;
  data: InitData;
  client: KubeClient;
  api?: FakeApiServer;
  stop(): Promise<void>;
}

/** A fresh simulated control plane whose certificates init's own phases generated. */
async function simulatedTarget(edit?: (cfg: InitConfig) => void): Promise<Target> {
  const cp = await startInProcessControlPlane(edit, {
    uploadCerts: true,
    certificateKey: CERTIFICATE_KEY,
  });
  // What the kubelet does at start: register its Node (pkg/kubelet/kubelet_node_status.go).
  cp.api.store.create({
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: "cp-1", labels: { "kubernetes.io/hostname": "cp-1" } },
  });
  const client = await kubeClientFromKubeConfig(
    await readFile(join(cp.root, "etc/kubernetes/super-admin.conf"), "utf8"),
    { description: "super-admin.conf" },
  );
  return { root: cp.root, data: cp.data, client, api: cp.api, stop: cp.stop };
}

/**
 * The real cluster of KUBEFORGE_E2E_KUBECONFIG. Its admin.conf is placed where init reads it,
 * with the server joining nodes use (cluster-info's, e.g. kind's in-cluster name) while the
 * phases' clients dial the address the kubeconfig gives (reachable from this machine).
 */
async function e2eTarget(kubeconfig: string): Promise<Target> {
  const { host, root, cleanup } = await tempRootHost();
  const text = await readFile(kubeconfig, "utf8");
  const client = await kubeClientFromKubeConfig(text, { description: kubeconfig });
  const reachable = /server:\s*(\S+)/.exec(text)?.[1] ?? "";
  const info = await client
    .get({ apiVersion: "v1", kind: "ConfigMap", name: "cluster-info", namespace: "kube-public" })
    .catch(() => undefined);
  const published = /server:\s*(\S+)/.exec(
    (info?.data as Record<string, string> | undefined)?.kubeconfig ?? "",
  )?.[1];
  await mkdir(join(root, "etc/kubernetes"), { recursive: true });
  await writeFile(
    join(root, "etc/kubernetes/admin.conf"),
    published ? text.replace(reachable, published) : text,
  );
  const nodes = await client.list("v1", "Node", {
    labelSelector: "node-role.kubernetes.io/control-plane",
  });
  const nodeName = nodes[0]?.metadata.name ?? "missing-control-plane-node";
  const cfg = baseInitConfig({ nodeName, advertiseAddress: "127.0.0.1" });
  const access = new NodeClusterAccess(host);
  const data = testInitData(host, cfg, testRelease(), {
    uploadCerts: true,
    certificateKey: CERTIFICATE_KEY,
    api: {
      clientFor: (path) => access.clientFor(path, { server: reachable }),
      probe: (url, opts) => access.probe(url, opts),
    },
  });
  return { root, data, client, stop: cleanup };
}

const newTarget = (edit?: (cfg: InitConfig) => void) =>
  E2E_KUBECONFIG ? e2eTarget(E2E_KUBECONFIG) : simulatedTarget(edit);

const get = (client: KubeClient, kind: string, name: string, namespace?: string) =>
  client.get({
    apiVersion:
      kind.endsWith("Binding") || kind.endsWith("Role")
        ? "rbac.authorization.k8s.io/v1"
        : kind === "Deployment" || kind === "DaemonSet"
          ? "apps/v1"
          : "v1",
    kind,
    name,
    ...(namespace ? { namespace } : {}),
  });

describe("init's API phases, one by one", () => {
  let t: Target;

  beforeAll(async () => {
    t = await newTarget();
  }, 60_000);
  afterAll(async () => {
    await t?.stop();
  });

  it("upload-config stores kubeadm-config and kubelet-config with their RBAC", async () => {
    await runPhase(phase("upload-config"), t.data);
    const kubeadmConfig = await get(t.client, "ConfigMap", "kubeadm-config", "kube-system");
    expect(Object.keys(kubeadmConfig.data as object)).toEqual(["ClusterConfiguration"]);
    const kubeletConfig = await get(t.client, "ConfigMap", "kubelet-config", "kube-system");
    expect(
      kubeletConfig.metadata.annotations?.["kubeadm.kubernetes.io/component-config.hash"],
    ).toMatch(/^sha256:[0-9a-f]{64}$/);
    for (const name of ["kubeadm:nodes-kubeadm-config", "kubeadm:kubelet-config"]) {
      await get(t.client, "Role", name, "kube-system");
      await get(t.client, "RoleBinding", name, "kube-system");
    }
  });

  it("bootstrap-token creates the token and a cluster-info that the BootstrapSigner signs", async () => {
    await runPhase(phase("bootstrap-token"), t.data);
    const [id] = t.data.cfg.init.bootstrapTokens[0]!.token!.split(".");
    await get(t.client, "Secret", `bootstrap-token-${id}`, "kube-system");
    let info: KubeObject | undefined;
    for (
      let i = 0;
      i < 50 && !(info?.data as Record<string, string> | undefined)?.[`jws-kubeconfig-${id}`];
      i++
    ) {
      info = await get(t.client, "ConfigMap", "cluster-info", "kube-public");
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(Object.keys(info!.data as object)).toContain(`jws-kubeconfig-${id}`);
  });

  it("mark-control-plane labels and taints the node", async () => {
    await runPhase(phase("mark-control-plane"), t.data);
    const node = await get(t.client, "Node", t.data.cfg.init.nodeRegistration.name);
    expect(node.metadata.labels?.["node-role.kubernetes.io/control-plane"]).toBe("");
    expect((node.spec as { taints: unknown[] }).taints).toContainEqual({
      key: "node-role.kubernetes.io/control-plane",
      effect: "NoSchedule",
    });
  });

  it.skipIf(E2E_KUBECONFIG !== undefined)(
    "upload-certs seals the CA keys with the certificate key",
    async () => {
      await runPhase(phase("upload-certs"), t.data);
      const secret = await get(t.client, "Secret", "kubeadm-certs", "kube-system");
      const sealed = Buffer.from((secret.data as Record<string, string>)["ca.key"]!, "base64");
      const decipher = createDecipheriv(
        "aes-256-gcm",
        Buffer.from(CERTIFICATE_KEY, "hex"),
        sealed.subarray(0, 12),
      );
      decipher.setAuthTag(sealed.subarray(sealed.length - 16));
      const plain = Buffer.concat([
        decipher.update(sealed.subarray(12, sealed.length - 16)),
        decipher.final(),
      ]);
      expect(plain).toEqual(await readFile(join(t.root, "etc/kubernetes/pki/ca.key")));
    },
  );

  it("addon installs CoreDNS and kube-proxy", async () => {
    await runPhase(phase("addon"), t.data);
    await get(t.client, "Deployment", "coredns", "kube-system");
    await get(t.client, "Service", "kube-dns", "kube-system");
    await get(t.client, "DaemonSet", "kube-proxy", "kube-system");
    await get(t.client, "ConfigMap", "kube-proxy", "kube-system");
  });
});

describe.skipIf(E2E_KUBECONFIG !== undefined)("failure paths against the simulation", () => {
  const targets: Target[] = [];
  const fresh = async (edit?: (cfg: InitConfig) => void) => {
    const t = await simulatedTarget(edit);
    targets.push(t);
    return t;
  };
  afterAll(async () => {
    for (const t of targets) await t.stop();
  });

  it("without super-admin.conf the missing cluster-admins binding is a clear error", async () => {
    const t = await fresh();
    await rm(join(t.root, "etc/kubernetes/super-admin.conf"));
    await expect(runPhase(phase("upload-config"), t.data)).rejects.toThrow(
      "error execution phase upload-config/kubeadm: could not bootstrap the admin user in file admin.conf: the ClusterRoleBinding for the kubeadm:cluster-admins Group is missing but there is no super-admin.conf to create it",
    );
  }, 30_000);

  it("a 403 from RBAC ends the phase at the API timeout with the server's reason", async () => {
    const t = await fresh();
    await runPhase(phase("upload-config"), t.data, undefined, "kubeadm");
    // Someone removes admin.conf's rights after the client was set up.
    await t.client.delete({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      name: "kubeadm:cluster-admins",
    });
    await expect(runPhase(phase("bootstrap-token"), t.data)).rejects.toThrow(
      /^error execution phase bootstrap-token: timed out after 3s waiting for .*: creating Secret kube-system\/bootstrap-token-abcdef: 403 Forbidden: secrets is forbidden: User "kubernetes-admin" cannot create resource "secrets" in API group "" in the namespace "kube-system"/,
    );
  }, 30_000);

  it("a 409 race is resolved: an object created meanwhile is mutated, a stale update retried", async () => {
    const t = await fresh();
    // Another writer created kubeadm-config first, with a key kubeadm must keep.
    await t.client.create({
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "kubeadm-config", namespace: "kube-system" },
      data: { ClusterConfiguration: "stale", Other: "kept" },
    });
    // And the first update loses a race (409 Conflict).
    t.api!.faults.inject({
      method: "PUT",
      pathPrefix: "/api/v1/namespaces/kube-system/configmaps/kubeadm-config",
      times: 1,
      respond: { code: 409, reason: "Conflict", message: "the object has been modified" },
    });
    await runPhase(phase("upload-config"), t.data, undefined, "kubeadm");
    expect(t.api!.faults.unused()).toEqual([]);
    const cm = await get(t.client, "ConfigMap", "kubeadm-config", "kube-system");
    const data = cm.data as Record<string, string>;
    expect(data.Other).toBe("kept");
    expect(data.ClusterConfiguration).toContain("kind: ClusterConfiguration");
  }, 30_000);

  it("a connection dropped mid-phase is retried", async () => {
    const t = await fresh();
    t.api!.faults.inject({
      method: "POST",
      pathPrefix: "/api/v1/namespaces/kube-system/secrets",
      times: 1,
      respond: "drop",
    });
    await runPhase(phase("bootstrap-token"), t.data);
    expect(t.api!.faults.unused()).toEqual([]);
    await get(t.client, "Secret", "bootstrap-token-abcdef", "kube-system");
  }, 30_000);

  it("wait-control-plane names each component that is not healthy and the timeout", async () => {
    const t = await fresh((c) => {
      c.init.timeouts.controlPlaneComponentHealthCheck = "2s";
      c.kubelet.healthzPort = 0; // no kubelet in this test
    });
    await runPhase(phase("control-plane"), t.data);
    t.api!.faults.setLivez(false);
    const error = await runPhase(phase("wait-control-plane"), t.data).catch((e: Error) => e);
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    expect(message).toMatch(/^error execution phase wait-control-plane: /);
    expect(message).toMatch(/kube-apiserver.*livez/);
    expect(message).toMatch(/kube-controller-manager.*127\.0\.0\.1:10257\/healthz/);
    expect(message).toMatch(/2s/);
  }, 30_000);
});
