import { execFile } from "node:child_process";
import { readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundledCli } from "../../support/cli.js";
import { startReleaseServer, type ReleaseServer } from "../../support/release-server.js";
import { fileDir } from "../../support/temp-dir.js";
import { bundledPost, runStep, stepReport } from "./support.js";

// The tools the action leaves for the job's later steps, through the bundled main.js as the
// runner runs it (from the full build's folder, where dist/cli.js sits next to main.js):
// `install-only: true` builds no cluster and puts `kubeforge` (the action's Node running its
// cli.js) and kubectl of the cluster's version (downloaded and checked against its published
// SHA-256, here from the local release server) in a folder added to PATH (GITHUB_PATH).

const exec = promisify(execFile);
const NO_ENGINE = "unix:///nonexistent/kubeforge-test-docker.sock";
const VERSION = "v1.35.0";
const arch = process.arch === "x64" ? "amd64" : process.arch;

let mainJs: string;
let server: ReleaseServer;
let caFile: string;

beforeAll(async () => {
  const [cli, s] = await Promise.all([bundledCli(), startReleaseServer()]);
  mainJs = join(cli.dir, "main.js");
  server = s;
  caFile = join(await fileDir("kubeforge-tools-ca-"), "ca.pem");
  await writeFile(caFile, server.ca);
}, 180_000);

afterAll(async () => {
  await server?.close();
});

const cluster = () =>
  [
    "apiVersion: kubeforge.dev/v1alpha1",
    "kind: Cluster",
    "name: tools",
    `kubernetesVersion: ${VERSION}`,
    "nodes:",
    // A container node on an engine nothing answers at: install-only must not ask for it.
    "- {name: cp-1, role: control-plane, host: docker}",
    "prepare:",
    `  downloads: {kubernetes: "${server.sources.kubernetes}", crictl: "${server.sources.crictl}", cniPlugins: "${server.sources.cniPlugins}"}`,
    "",
  ].join("\n");

describe("action main: install-only, and the tools on PATH", () => {
  it("puts kubeforge and kubectl on PATH, builds nothing, and the post step leaves all alone", async () => {
    const inputs = { "install-only": "true", cluster: cluster() };
    const step = await runStep(mainJs, {
      inputs,
      env: { NODE_EXTRA_CA_CERTS: caFile, DOCKER_HOST: NO_ENGINE },
      timeoutMs: 120_000,
    });
    expect(step.code, stepReport(step)).toBe(0);
    const bin = join(step.runnerTemp, "kubeforge-bin");
    expect(step.paths).toEqual([bin]);
    // kubectl: the release's bytes, executable.
    const kubectlPath = `/dl/release/${VERSION}/bin/linux/${arch}/kubectl`;
    expect(await readFile(join(bin, "kubectl"))).toEqual(await server.payload(kubectlPath));
    expect((await stat(join(bin, "kubectl"))).mode & 0o777).toBe(0o755);
    expect(server.hits(kubectlPath)).toBe(1);
    // kubeforge: runs the CLI next to main.js with this Node, arguments passed on unchanged.
    const version = await exec(join(bin, "kubeforge"), ["--version"]);
    expect(version.stdout).toMatch(/^kubeforge \S+ \(Kubernetes /);
    const token = await exec(join(bin, "kubeforge"), ["token", "generate"]);
    expect(token.stdout.trim()).toMatch(/^[a-z0-9]{6}\.[a-z0-9]{16}$/);
    // No cluster: no host contacted, no kubeconfig, nothing exported.
    expect(step.stdout).not.toContain("::group::");
    expect(step.outputs.get("kubernetes-version")).toBe(VERSION);
    expect(step.outputs.has("kubeconfig")).toBe(false);
    expect(step.env.size).toBe(0);
    expect(step.stdout).toContain(
      `install-only: kubeforge and kubectl ${VERSION} are on PATH; no cluster was built`,
    );

    const state: Record<string, string> = {};
    for (const [k, v] of step.state) state[`STATE_${k}`] = v;
    const post = await runStep(await bundledPost(), {
      inputs,
      runnerTemp: step.runnerTemp,
      env: { ...state, DOCKER_HOST: NO_ENGINE },
      timeoutMs: 60_000,
    });
    expect(post.code, stepReport(post)).toBe(0);
    expect(post.stdout).toContain(
      "install-only: no cluster was built, nothing to collect or tear down",
    );
    expect(post.stdout).not.toMatch(/::warning::|::group::/);
  }, 240_000);

  it("kubectl-version: that kubectl instead, and a warning outside kubectl's skew policy", async () => {
    // v1.33 against the cluster's v1.35: two minors, outside the one kubectl is supported within.
    const other = "v1.33.2";
    const step = await runStep(mainJs, {
      inputs: { "install-only": "true", cluster: cluster(), "kubectl-version": other },
      env: { NODE_EXTRA_CA_CERTS: caFile, DOCKER_HOST: NO_ENGINE },
      timeoutMs: 120_000,
    });
    expect(step.code, stepReport(step)).toBe(0);
    const bin = join(step.runnerTemp, "kubeforge-bin");
    const kubectlPath = `/dl/release/${other}/bin/linux/${arch}/kubectl`;
    expect(await readFile(join(bin, "kubectl"))).toEqual(await server.payload(kubectlPath));
    expect(step.outputs.get("kubernetes-version")).toBe(VERSION);
    expect(step.stdout).toContain(
      `::warning::input kubectl-version: kubectl ${other} is 2 minor versions older than the API server (${VERSION})`,
    );
    expect(step.stdout).toContain(`install-only: kubeforge and kubectl ${other} are on PATH`);
  }, 120_000);

  it.each([
    [{ "install-only": "yes" }, /^::error::input install-only: "yes" is not true or false$/m],
    [
      { "install-only": "true", "dry-run": "true" },
      /^::error::input install-only: builds no cluster, so there is nothing for dry-run to plan/m,
    ],
  ])("refuses %j", async (bad, says) => {
    const step = await runStep(mainJs, {
      inputs: { cluster: cluster(), ...bad },
      timeoutMs: 60_000,
    });
    expect(step.code, stepReport(step)).toBe(1);
    expect(step.stdout).toMatch(says);
    expect(step.paths).toEqual([]);
  });

  it("a release server that fails the download fails install-only, naming the URL", async () => {
    const kubectlPath = `/dl/release/${VERSION}/bin/linux/${arch}/kubectl`;
    server.fault(kubectlPath, "tampered-checksum");
    try {
      const step = await runStep(mainJs, {
        inputs: { "install-only": "true", cluster: cluster() },
        env: { NODE_EXTRA_CA_CERTS: caFile },
        timeoutMs: 120_000,
      });
      expect(step.code, stepReport(step)).toBe(1);
      expect(step.stdout).toMatch(/::error::.*kubectl.*does not match its published checksum/);
      expect(step.paths).toEqual([]);
    } finally {
      server.fault(kubectlPath, undefined);
    }
  }, 120_000);
});
