import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundledCli } from "../../support/cli.js";
import { startStallingRegistry } from "../../support/stalling-registry.js";
import { createTestbed, type SshTestbed, type SshTestHost } from "../../support/testbed.js";
import { clusterFile, diagnostics, runner, type Runner } from "./support.js";

// `kubeforge up` against inputs and hosts that would once corrupt a node or hang a run, over
// real SSH on the testbed.

let bed: SshTestbed;
let r: Runner;
let cliJs: string;

beforeAll(async () => {
  let cli: Awaited<ReturnType<typeof bundledCli>>;
  [bed, r, cli] = await Promise.all([
    createTestbed(["cp-1", "w-1"], { ssh: true }),
    runner(),
    bundledCli(),
  ]);
  cliJs = join(cli.dir, "cli.js");
}, 300_000);

afterAll(async () => {
  await bed?.stop();
}, 120_000);

describe("a sudo password written as a YAML block (with its trailing new line)", () => {
  it("reaches sudo as one line: every file written through it lands whole", async () => {
    const w1 = bed.host("w-1");
    const text = clusterFile({
      name: "sudo-block",
      controlPlanes: [bed.host("cp-1")],
      workers: [w1],
      // w-1's login is the testbed user whose sudo asks for the password.
      userFor: (h) => (h === w1 ? h.ssh.passwordSudoUser : "root"),
      ssh: ["sudoPassword: |", `  ${w1.ssh.password}`],
    });
    const path = await r.writeClusterFile(text, "sudo-block.yaml");
    const kubeconfig = join(r.dir, "sudo-block.conf");
    const up = await r.kubeforge(["up", "-f", path, "--kubeconfig", kubeconfig]);
    if (up.code !== 0) throw new Error(await diagnostics(bed, up));
    // Written on w-1 through `sudo -S`: the CA, the kubelet's kubeconfig and configuration.
    const ca = await readFile(w1.path("etc/kubernetes/pki/ca.crt"), "utf8");
    expect(ca).toBe(await readFile(bed.host("cp-1").path("etc/kubernetes/pki/ca.crt"), "utf8"));
    expect(ca.startsWith("-----BEGIN CERTIFICATE-----\n")).toBe(true);
    expect(await readFile(w1.path("etc/kubernetes/kubelet.conf"), "utf8")).toMatch(/^apiVersion: /);
    expect(await readFile(w1.path("var/lib/kubelet/config.yaml"), "utf8")).toMatch(/^apiVersion: /);
    expect(up.stderr).not.toContain(w1.ssh.password);
    const down = await r.kubeforge(["down", "-f", path]);
    expect(down.code, down.stderr).toBe(0);
  }, 420_000);
});

/**
 * Runs `kubeforge up -f path`, sends SIGINT once `ready()` says the run is where the test wants
 * it, and returns how long the process took to end after the signal, its code and its stderr.
 */
async function interruptedUp(path: string, ready: (stderr: string) => Promise<boolean> | boolean) {
  const child = spawn(process.execPath, [cliJs, "up", "-f", path], {
    env: { ...process.env, HOME: r.dir },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
  const closed = new Promise<number | null>((res) => child.on("close", res));
  try {
    await expect.poll(() => ready(stderr), { timeout: 120_000, interval: 200 }).toBe(true);
    const signalled = Date.now();
    child.kill("SIGINT");
    const code = await closed;
    return { ms: Date.now() - signalled, code, stderr };
  } finally {
    child.kill("SIGKILL");
  }
}

/** Nothing of a cluster was written on the host. */
async function untouched(h: SshTestHost): Promise<void> {
  await expect(readFile(h.path("var/lib/kubeforge/node.json"))).rejects.toThrow();
  await expect(readFile(h.path("etc/kubernetes/kubelet.conf"))).rejects.toThrow();
}

describe("SIGINT is acted on at once", () => {
  it("while SSH connections are retried", async () => {
    const w1 = bed.host("w-1");
    const path = await r.writeClusterFile(
      clusterFile({ name: "int-connect", controlPlanes: [bed.host("cp-1")], workers: [w1] }),
      "int-connect.yaml",
    );
    // w-1 does not answer: each attempt waits for the SSH handshake (15 s), then again.
    await w1.setLinkUp(false);
    try {
      const run = await interruptedUp(path, (err) => err.includes("cp-1: [connect] connected"));
      expect(run.ms, run.stderr).toBeLessThan(3_000);
      expect(run.code, run.stderr).toBe(130);
      expect(run.stderr).toMatch(
        /^interrupted by SIGINT: failed on 1 of 2 hosts:\n - w-1: w-1 \(ssh:\/\/root@[\d.]+:22\): cancelled while connecting$/m,
      );
    } finally {
      await w1.setLinkUp(true);
    }
    for (const h of bed.hosts) await untouched(h);
  }, 300_000);

  it("while a download stalls", async () => {
    const stalled = await startStallingRegistry("127.0.0.1");
    const port = /:(\d+)\//.exec(stalled.repository)![1];
    const text = clusterFile({
      name: "int-download",
      controlPlanes: [bed.host("cp-1")],
      workers: [],
    }).replace(
      "prepare: {enabled: false}",
      `prepare: {enabled: true, installPackages: false, prePullImages: false, downloads: {kubernetes: "https://127.0.0.1:${port}"}}`,
    );
    const path = await r.writeClusterFile(text, "int-download.yaml");
    try {
      // The download has reached the server, which never answers (the idle timeout is 60 s).
      const run = await interruptedUp(path, () => stalled.connections > 0);
      expect(run.ms, run.stderr).toBeLessThan(3_000);
      expect(run.code, run.stderr).toBe(130);
      expect(run.stderr).toMatch(
        /^interrupted by SIGINT: .*downloading https:\/\/127\.0\.0\.1:\d+\/\S+ was stopped: interrupted by SIGINT/m,
      );
    } finally {
      await stalled.close();
    }
    for (const h of bed.hosts) await untouched(h);
  }, 300_000);
});
