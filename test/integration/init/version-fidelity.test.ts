import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { load } from "js-yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundledCli, type CliResult } from "../../support/cli.js";

// Behaviour that depends on the exact Kubernetes version or on a kubeadm feature gate, seen the
// way a user sees it: `kubeforge init --dry-run` of the bundled CLI, its printed API objects and
// the files it renders.

const TOKEN = "abcdef.0123456789abcdef";
let kubeforge: (args: string[]) => Promise<CliResult>;
const temps: string[] = [];

interface DryRun {
  result: CliResult;
  dir: string;
  objects: { kind: string; metadata: { name: string }; roleRef?: unknown; subjects?: unknown }[];
}

async function dryRun(version: string, ...extra: string[]): Promise<DryRun> {
  const dir = await mkdtemp(join(tmpdir(), "kubeforge-fidelity-"));
  temps.push(dir);
  const result = await kubeforge([
    "init",
    "--kubernetes-version",
    version,
    "--apiserver-advertise-address",
    "10.0.0.10",
    "--control-plane-endpoint",
    "lb.example.com",
    "--node-name",
    "cp-1",
    "--ignore-preflight-errors",
    "all",
    "--token",
    TOKEN,
    "--dry-run",
    "--dry-run-dir",
    dir,
    ...extra,
  ]);
  const objects = result.stdout
    .split(/^---\n/m)
    .filter((d) => d.length > 0)
    .map((d) => load(d) as DryRun["objects"][number]);
  return { result, dir, objects };
}

const subject = (dir: string, cert: string) =>
  execFileSync(
    "openssl",
    ["x509", "-noout", "-subject", "-in", join(dir, "etc/kubernetes/pki", `${cert}.crt`)],
    { encoding: "utf8" },
  ).trim();

async function kubeletServer(dir: string): Promise<string> {
  const conf = load(await readFile(join(dir, "etc/kubernetes/kubelet.conf"), "utf8")) as {
    clusters: { cluster: { server: string } }[];
  };
  return conf.clusters[0]!.cluster.server;
}

beforeAll(async () => {
  ({ kubeforge } = await bundledCli());
}, 60_000);

afterAll(async () => {
  for (const d of temps) await rm(d, { recursive: true, force: true });
});

describe("the API server's kubelet client (kubernetes/kubernetes#138957)", () => {
  const runs: Record<string, DryRun> = {};
  beforeAll(async () => {
    for (const v of ["v1.35.4", "v1.35.5", "v1.37.1"]) runs[v] = await dryRun(v);
  }, 180_000);

  it.each([
    ["v1.35.4", false, "subject=O=kubeadm:cluster-admins, CN=kube-apiserver-kubelet-client"],
    ["v1.35.5", true, "subject=CN=kube-apiserver-kubelet-client"],
    ["v1.37.1", true, "subject=CN=kube-apiserver-kubelet-client"],
  ])("%s: binding created %s, certificate %s", (v, binding, certSubject) => {
    const run = runs[v]!;
    expect(run.result.code, run.result.stderr).toBe(0);
    const crb = run.objects.find(
      (o) =>
        o.kind === "ClusterRoleBinding" && o.metadata.name === "kubeadm:apiserver-kubelet-client",
    );
    if (binding) {
      expect(crb).toMatchObject({
        roleRef: {
          apiGroup: "rbac.authorization.k8s.io",
          kind: "ClusterRole",
          name: "system:kubelet-api-admin",
        },
        subjects: [{ kind: "User", name: "kube-apiserver-kubelet-client" }],
      });
    } else {
      expect(crb).toBeUndefined();
    }
    expect(subject(run.dir, "apiserver-kubelet-client").replace(/ = /g, "=")).toBe(certSubject);
  });
});

describe("kubelet.conf of the init node (ControlPlaneKubeletLocalMode, kubernetes/kubernetes#125780)", () => {
  it("talks to the node's own API server by default, even with a controlPlaneEndpoint", async () => {
    const run = await dryRun("v1.35.8");
    expect(run.result.code, run.result.stderr).toBe(0);
    expect(await kubeletServer(run.dir)).toBe("https://10.0.0.10:6443");
  }, 60_000);

  it("talks to controlPlaneEndpoint with the gate off, which v1.34 still allows", async () => {
    const run = await dryRun("v1.34.4", "--feature-gates", "ControlPlaneKubeletLocalMode=false");
    expect(run.result.code, run.result.stderr).toBe(0);
    expect(await kubeletServer(run.dir)).toBe("https://lb.example.com:6443");
  }, 60_000);

  it("refuses the gate off from v1.35, where kubeadm locks it on (kubernetes/kubernetes#134106)", async () => {
    const run = await dryRun("v1.35.8", "--feature-gates", "ControlPlaneKubeletLocalMode=false");
    expect(run.result.code).toBe(1);
    expect(run.result.stderr).toContain(
      "--feature-gates: cannot set feature gate ControlPlaneKubeletLocalMode to false: it is GA and locked to true in Kubernetes v1.35; remove it",
    );
  }, 60_000);
});

describe("kubeforge config validate", () => {
  it("reports an unquoted YAML 1.1 boolean in a string field, with its path and the fix", async () => {
    const dir = await mkdtemp(join(tmpdir(), "kubeforge-validate-"));
    temps.push(dir);
    const file = join(dir, "kubeadm.yaml");
    await writeFile(
      file,
      "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\napiServer:\n  extraArgs:\n  - name: profiling\n    value: yes\n",
    );
    const result = await kubeforge(["config", "validate", "--config", file]);
    expect(result.code).not.toBe(0);
    expect(result.stdout).not.toContain("ok");
    expect(result.stderr).toContain(
      `${file}: ClusterConfiguration: field "apiServer.extraArgs[0].value" must be a string, but yes is read as the boolean true by Kubernetes' YAML rules; quote it: "yes"`,
    );
  }, 30_000);
});
