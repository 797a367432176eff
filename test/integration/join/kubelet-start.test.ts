import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundledCli } from "../../support/cli.js";
import { rootfsWorker, type RootfsWorker } from "../../support/rootfs-worker.js";
import { SIM_TOKEN, initializedSimHost, type SimHost } from "../../support/sim-cluster.js";

// `kubeforge join` of a worker where kubelet-start or the TLS bootstrap wait goes wrong: a
// control plane built by `kubeforge init` on a simulated host, joined by hosts with their own
// rootfs and simulated kubelet. Results are read with kubectl and from the files on the node.

const run = promisify(execFile);

let kubeforge: Awaited<ReturnType<typeof bundledCli>>["kubeforge"];
let cp: SimHost;
let caHash: string;
const cleanups: (() => Promise<void>)[] = [];

/** A worker with its own rootfs and simulated kubelet, removed after the tests. */
async function newWorker(name: string): Promise<RootfsWorker> {
  const w = await rootfsWorker(name);
  cleanups.push(() => w.remove());
  return w;
}

/** kubectl with the control plane's admin.conf; output as text. */
async function kubectl(args: string[]): Promise<string> {
  const { stdout } = await run("kubectl", [
    "--kubeconfig",
    cp.path("etc/kubernetes/admin.conf"),
    ...args,
  ]);
  return stdout;
}

beforeAll(async () => {
  ({ kubeforge } = await bundledCli());
  ({ cp, caHash } = await initializedSimHost(kubeforge, ["--ignore-preflight-errors", "all"]));
  cleanups.push(() => cp.stop());
}, 180_000);

afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

describe("kubeforge join: kubelet-start and the TLS bootstrap wait", () => {
  it("refuses a node named as a Ready Node, before touching the kubelet", async () => {
    // The control plane's own Node, kept Ready by its (simulated) kubelet once a network
    // add-on has put its CNI configuration in place.
    await mkdir(cp.path("etc/cni/net.d"), { recursive: true });
    await writeFile(
      cp.path("etc/cni/net.d/10-test.conflist"),
      JSON.stringify({ cniVersion: "1.0.0", name: "test", plugins: [{ type: "bridge" }] }),
    );
    await kubectl(["wait", "--for=condition=Ready", "node/cp-1", "--timeout=60s"]);
    const csrsBefore = await kubectl(["get", "csr", "-o", "name"]);
    const w = await newWorker("cp-1");
    const r = await kubeforge(
      [
        "join",
        `${cp.address}:${cp.apiPort}`,
        "--token",
        SIM_TOKEN,
        "--discovery-token-ca-cert-hash",
        `sha256:${caHash}`,
        "--node-name",
        "cp-1",
        "--rootfs",
        w.rootfs,
        "--ignore-preflight-errors",
        "all",
        "--patches",
        w.patches,
      ],
      { env: w.node.env },
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      'error execution phase kubelet-start: a Node with name "cp-1" and status "Ready" already exists in the cluster. You must delete the existing Node or change the name of this new joining Node',
    );
    // The kubelet was neither configured nor started: no CSR, no configuration.
    expect(await kubectl(["get", "csr", "-o", "name"])).toBe(csrsBefore);
    for (const f of [
      "var/lib/kubelet/config.yaml",
      "var/lib/kubelet/kubeadm-flags.env",
      "etc/kubernetes/kubelet.conf",
    ]) {
      expect([f, existsSync(w.path(f))]).toEqual([f, false]);
    }
  }, 120_000);

  it("removes bootstrap-kubelet.conf, and the token in it, when the TLS bootstrap wait fails", async () => {
    // Without kubeadm's auto-approval binding the kubelet's CSR stays pending
    // (csrapproving asks whether the bootstrapper may create certificatesigningrequests/nodeclient).
    const binding = "kubeadm:node-autoapprove-bootstrap";
    const saved = JSON.parse(
      await kubectl(["get", "clusterrolebinding", binding, "-o", "json"]),
    ) as {
      metadata: Record<string, unknown>;
    };
    const { name, labels, annotations } = saved.metadata;
    const restore = join(cp.rootfs, "..", "autoapprove.json");
    await writeFile(restore, JSON.stringify({ ...saved, metadata: { name, labels, annotations } }));
    await kubectl(["delete", "clusterrolebinding", binding]);
    try {
      const w = await newWorker("w-pending");
      const config = await w.writeJoinConfiguration({
        endpoint: `${cp.address}:${cp.apiPort}`,
        token: SIM_TOKEN,
        caHash,
        ignorePreflightErrors: "all",
        extra: ["timeouts: {kubeletHealthCheck: 20s, tlsBootstrap: 3s}"],
      });
      const r = await kubeforge(["join", "--config", config, "--rootfs", w.rootfs], {
        env: w.node.env,
      });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(
        /error execution phase kubelet-wait-bootstrap: .*the kubelet to write a usable \/etc\/kubernetes\/kubelet\.conf \(TLS bootstrap\)/,
      );
      // The kubelet did start with it and asked for a certificate.
      expect(await kubectl(["get", "csr", "-o", "name"])).toMatch(/csr/);
      expect(existsSync(w.path("var/lib/kubelet/config.yaml"))).toBe(true);
      expect(existsSync(w.path("etc/kubernetes/bootstrap-kubelet.conf"))).toBe(false);
    } finally {
      await kubectl(["create", "--validate=false", "-f", restore]);
    }
  }, 120_000);
});
