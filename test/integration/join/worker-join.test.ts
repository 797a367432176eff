import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { load } from "js-yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listFiles } from "../../../src/cli/files.js";
import { bundledCli, type CliResult } from "../../support/cli.js";
import { freePort } from "../../support/ports.js";
import { rootfsWorker, type RootfsWorker } from "../../support/rootfs-worker.js";
import { TEST_HOST_PREFLIGHT_IGNORES_FLAG } from "../../support/preflight-ignores.js";
import {
  SIM_CERTIFICATE_KEY,
  SIM_TOKEN,
  initializedSimHost,
  type SimHost,
} from "../../support/sim-cluster.js";

// `kubeforge join` of a worker: a control plane built by `kubeforge init` on a simulated host,
// then a second host (its own rootfs and simulated kubelet) joining with token discovery and
// TLS bootstrap. Results are checked with openssl and kubectl, not with kubeforge's code.

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

/** kubectl with the control plane's admin.conf, `input` on stdin; its output as text. */
function kubectlText(args: string[], input?: string): string {
  return execFileSync("kubectl", ["--kubeconfig", cp.path("etc/kubernetes/admin.conf"), ...args], {
    encoding: "utf8",
    ...(input !== undefined ? { input } : {}),
  });
}

/** The control plane's etcd members, as etcdctl lists them over TLS. */
function etcdMembers(): unknown[] {
  const pki = cp.path("etc/kubernetes/pki/etcd");
  const members = execFileSync(
    "etcdctl",
    [
      `--endpoints=https://127.0.0.1:${cp.etcdClientPort}`,
      `--cacert=${pki}/ca.crt`,
      `--cert=${pki}/healthcheck-client.crt`,
      `--key=${pki}/healthcheck-client.key`,
      "member",
      "list",
      "-w",
      "json",
    ],
    { env: { ...process.env, ETCDCTL_API: "3" } },
  ).toString();
  return (JSON.parse(members) as { members: unknown[] }).members;
}

/**
 * A control-plane join on a rootfs worker checks ports 6443, 10257 and 10259 of this machine,
 * whose root network namespace the suite's other files share (what listens there is not this
 * file's): the refusals below are about the join, not the ports.
 */
const CONTROL_PLANE_PORT_IGNORES = ["Port-6443", "Port-10257", "Port-10259"];

function joinArgs(w: RootfsWorker, name: string, extra: string[] = []): string[] {
  return [
    "join",
    `${cp.address}:${cp.apiPort}`,
    "--token",
    SIM_TOKEN,
    "--node-name",
    name,
    "--rootfs",
    w.rootfs,
    "--ignore-preflight-errors",
    [
      TEST_HOST_PREFLIGHT_IGNORES_FLAG,
      ...(extra.includes("--control-plane") ? CONTROL_PLANE_PORT_IGNORES : []),
    ].join(","),
    "--patches",
    w.patches,
    ...extra,
  ];
}

beforeAll(async () => {
  ({ kubeforge } = await bundledCli());
  ({ cp, caHash } = await initializedSimHost(kubeforge, [
    "--ignore-preflight-errors",
    TEST_HOST_PREFLIGHT_IGNORES_FLAG,
    "--upload-certs",
  ]));
  cleanups.push(() => cp.stop());
}, 180_000);

afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

describe("kubeforge join of a worker", () => {
  let w: RootfsWorker;
  let result: CliResult;

  beforeAll(async () => {
    w = await newWorker("w-1");
    result = await kubeforge(
      joinArgs(w, "w-1", ["--discovery-token-ca-cert-hash", `sha256:${caHash}`]),
      { env: w.node.env },
    );
    if (result.code !== 0) console.log(result.stderr, await w.node.logs());
  }, 180_000);

  it("succeeds and says so on stdout", () => {
    expect(result.stderr).not.toMatch(/error execution phase/);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("This node has joined the cluster:");
  });

  it("ends with a kubelet.conf whose client certificate the cluster CA signed for system:node:w-1", async () => {
    const conf = load(await readFile(w.path("etc/kubernetes/kubelet.conf"), "utf8")) as {
      users: { user: Record<string, string> }[];
    };
    const pem = conf.users[0]!.user["client-certificate"]!;
    expect(pem).toBe("/var/lib/kubelet/pki/kubelet-client-current.pem");
    const cert = w.path(pem);
    const verify = execFileSync("openssl", [
      "verify",
      "-CAfile",
      cp.path("etc/kubernetes/pki/ca.crt"),
      cert,
    ]).toString();
    expect(verify).toContain(": OK");
    const subject = execFileSync("openssl", ["x509", "-noout", "-subject", "-in", cert]).toString();
    expect(subject).toMatch(/O\s*=\s*system:nodes/);
    expect(subject).toMatch(/CN\s*=\s*system:node:w-1/);
  });

  it("removes the bootstrap token from the node and keeps the cluster CA", async () => {
    expect(existsSync(w.path("etc/kubernetes/bootstrap-kubelet.conf"))).toBe(false);
    expect(await readFile(w.path("etc/kubernetes/pki/ca.crt"))).toEqual(
      await readFile(cp.path("etc/kubernetes/pki/ca.crt")),
    );
  });

  it("writes the cluster's kubelet configuration with the user's patch", async () => {
    const cluster = load(
      (
        await cp.kubectl<{ data: { kubelet: string } }>([
          "get",
          "cm",
          "-n",
          "kube-system",
          "kubelet-config",
        ])
      ).data.kubelet,
    ) as Record<string, unknown>;
    const written = load(await readFile(w.path("var/lib/kubelet/config.yaml"), "utf8")) as Record<
      string,
      unknown
    >;
    const patch = load(
      await readFile(join(w.patches, "kubeletconfiguration+merge.yaml"), "utf8"),
    ) as Record<string, unknown>;
    // NodeLocalCRISocket (v1.35): the node's CRI socket comes from instance-config.yaml.
    const instance = load(
      await readFile(w.path("var/lib/kubelet/instance-config.yaml"), "utf8"),
    ) as Record<string, unknown>;
    expect(instance).toEqual({
      containerRuntimeEndpoint: "unix:///var/run/containerd/containerd.sock",
    });
    expect(written).toEqual({ ...cluster, ...patch, ...instance });
  });

  it("ran the join checks for real: only the test host's known failures were ignored", () => {
    expect(result.stderr).toMatch(/\[WARNING KubeletVersion\]: couldn't get kubelet version/);
    expect(result.stderr).not.toMatch(/\[WARNING (FileAvailable|Port|CRI|HTTPProxy)/);
  });

  it("joining again stops at the node's kubelet.conf, before any discovery", async () => {
    // An endpoint nothing answers on: discovery would retry it until its timeout.
    const args = joinArgs(w, "w-1", ["--discovery-token-ca-cert-hash", `sha256:${caHash}`]);
    args[1] = `${cp.address}:${await freePort()}`;
    const again = await kubeforge(args, { env: w.node.env });
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(
      "[ERROR FileAvailable--etc-kubernetes-kubelet.conf]: /etc/kubernetes/kubelet.conf already exists",
    );
    expect(again.stderr).toContain(
      "[ERROR FileAvailable--etc-kubernetes-pki-ca.crt]: /etc/kubernetes/pki/ca.crt already exists",
    );
    expect(again.stderr).not.toMatch(/discover/i);
  }, 30_000);

  it("registers the Node in the cluster", async () => {
    const node = await cp.kubectl<{ metadata: { name: string } }>(["get", "node", "w-1"]);
    expect(node.metadata.name).toBe("w-1");
  });
});

describe("kubeforge join refusals", () => {
  it("a control-plane join without --certificate-key needs the shared certificates on the node", async () => {
    const w = await newWorker("cp-3");
    const r = await kubeforge(
      joinArgs(w, "cp-3", [
        "--discovery-token-ca-cert-hash",
        `sha256:${caHash}`,
        "--control-plane",
        "--apiserver-advertise-address",
        cp.address,
      ]),
      { env: w.node.env },
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /error execution phase preflight: One or more conditions for hosting a new control plane instance is not satisfied\.\n\n\[failure loading certificate for CA: couldn't load the certificate file \/etc\/kubernetes\/pki\/ca\.crt: open \/etc\/kubernetes\/pki\/ca\.crt: no such file or directory, /,
    );
    expect(await listFiles(w.rootfs)).toEqual([]);
  }, 60_000);

  it("a control-plane join with a wrong certificate key adds no etcd member and writes nothing", async () => {
    const w = await newWorker("cp-2");
    const r = await kubeforge(
      joinArgs(w, "cp-2", [
        "--discovery-token-ca-cert-hash",
        `sha256:${caHash}`,
        "--control-plane",
        "--apiserver-advertise-address",
        cp.address,
        "--certificate-key",
        "ab".repeat(32),
      ]),
      { env: w.node.env },
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /error execution phase control-plane-prepare\/download-certs: error decoding the kubeadm-certs Secret with the certificate key/,
    );
    expect(await listFiles(w.rootfs)).toEqual([]);
    expect(etcdMembers()).toHaveLength(1);
  }, 60_000);

  it("a CA that matches no pin fails at once and writes nothing", async () => {
    const w = await newWorker("w-2");
    const started = Date.now();
    const r = await kubeforge(
      joinArgs(w, "w-2", ["--discovery-token-ca-cert-hash", `sha256:${"0".repeat(64)}`]),
      { env: w.node.env },
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /error execution phase preflight: couldn't validate the identity of the API Server: .*sha256:0{64}/s,
    );
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(await listFiles(w.rootfs)).toEqual([]);
  }, 60_000);

  it("a v1beta3 JoinConfiguration is refused once discovery shows a v1.37 cluster; nothing written", async () => {
    const w = await newWorker("w-5");
    const config = await w.writeJoinConfiguration({
      apiVersion: "kubeadm.k8s.io/v1beta3",
      endpoint: `${cp.address}:${cp.apiPort}`,
      token: SIM_TOKEN,
      caHash,
      ignorePreflightErrors: TEST_HOST_PREFLIGHT_IGNORES_FLAG,
    });
    // The cluster says v1.37 for this test: kubeadm 1.37 reads no v1beta3 document.
    const kubeadmConfig = JSON.parse(
      kubectlText(["-n", "kube-system", "get", "configmap", "kubeadm-config", "-o", "json"]),
    ) as { data: { ClusterConfiguration: string } };
    const original = JSON.stringify(kubeadmConfig);
    kubeadmConfig.data.ClusterConfiguration = kubeadmConfig.data.ClusterConfiguration.replace(
      /kubernetesVersion: .*/,
      "kubernetesVersion: v1.37.0",
    );
    kubectlText(["replace", "--validate=false", "-f", "-"], JSON.stringify(kubeadmConfig));
    let r: CliResult;
    try {
      r = await kubeforge(["join", "--config", config, "--rootfs", w.rootfs], { env: w.node.env });
    } finally {
      kubectlText(
        ["replace", "--validate=false", "-f", "-"],
        original.replace(/"resourceVersion":"[^"]*",?/, ""),
      );
    }
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `${config}: JoinConfiguration uses kubeadm.k8s.io/v1beta3, which kubeadm no longer reads from Kubernetes v1.37 (v1.37 here)`,
    );
    expect(await listFiles(w.rootfs)).toEqual([]);
  }, 60_000);

  it("token discovery without a pin is refused unless the unsafe flag is given", async () => {
    const w = await newWorker("w-3");
    const r = await kubeforge(joinArgs(w, "w-3"), { env: w.node.env });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("--discovery-token-unsafe-skip-ca-verification");
    expect(await listFiles(w.rootfs)).toEqual([]);
  }, 60_000);

  it("--dry-run of a control-plane join downloads and renders, but adds no etcd member", async () => {
    const w = await newWorker("cp-4");
    const out = await mkdtemp(join(tmpdir(), "kubeforge-join-dry-"));
    cleanups.push(() => rm(out, { recursive: true, force: true }));
    const r = await kubeforge(
      joinArgs(w, "cp-4", [
        "--discovery-token-ca-cert-hash",
        `sha256:${caHash}`,
        "--control-plane",
        "--apiserver-advertise-address",
        cp.address,
        "--certificate-key",
        SIM_CERTIFICATE_KEY,
        "--dry-run",
        "--dry-run-dir",
        out,
      ]),
      { env: w.node.env },
    );
    expect(r.stderr).not.toMatch(/error execution phase/);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("[dryrun] Would add etcd member cp-4");
    expect(await listFiles(w.rootfs)).toEqual([]);
    const written = (await listFiles(out)).map((f) => f.slice(out.length));
    expect(written).toEqual(
      expect.arrayContaining([
        "/etc/kubernetes/pki/ca.key",
        "/etc/kubernetes/pki/apiserver.crt",
        "/etc/kubernetes/admin.conf",
        "/etc/kubernetes/manifests/etcd.yaml",
        "/etc/kubernetes/manifests/kube-apiserver.yaml",
      ]),
    );
    // The downloaded CA key is the cluster's, byte for byte.
    expect(await readFile(join(out, "etc/kubernetes/pki/ca.key"))).toEqual(
      await readFile(cp.path("etc/kubernetes/pki/ca.key")),
    );
    expect(etcdMembers()).toHaveLength(1);
  }, 60_000);

  it("--dry-run discovers for real and writes only into the dry-run folder", async () => {
    const w = await newWorker("w-4");
    const out = await mkdtemp(join(tmpdir(), "kubeforge-join-dry-"));
    cleanups.push(() => rm(out, { recursive: true, force: true }));
    const r = await kubeforge(
      joinArgs(w, "w-4", [
        "--discovery-token-ca-cert-hash",
        `sha256:${caHash}`,
        "--dry-run",
        "--dry-run-dir",
        out,
      ]),
      { env: w.node.env },
    );
    expect(r.stderr).not.toMatch(/error execution phase/);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain("[preflight] Reading configuration from the cluster...");
    expect(await listFiles(w.rootfs)).toEqual([]);
    // As kubeadm's dry run with ControlPlaneKubeletLocalMode: kubelet-wait-bootstrap returns
    // before its deferred removal, so bootstrap-kubelet.conf stays (kubernetes/kubernetes#129956).
    const written = (await listFiles(out)).map((f) => f.slice(out.length)).sort();
    expect(r.stderr).toContain(
      "[kubelet-wait-bootstrap] Would wait for the kubelet to be bootstrapped",
    );
    expect(written).toEqual([
      "/etc/kubernetes/bootstrap-kubelet.conf",
      "/etc/kubernetes/pki/ca.crt",
      "/var/lib/kubelet/config.yaml",
      "/var/lib/kubelet/instance-config.yaml",
      "/var/lib/kubelet/kubeadm-flags.env",
    ]);
    expect(r.stderr).toContain("[dryrun] Would run on local: systemctl restart kubelet");
  }, 60_000);
});
