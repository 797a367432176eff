import { execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundledCli } from "../../support/cli.js";
import { imageRepositoryDocument, startStallingRegistry } from "../../support/stalling-registry.js";
import { createTestbed, type SshTestbed, type SshTestHost } from "../../support/testbed.js";
import { TESTBED_PREFLIGHT_IGNORES, clusterFile, runner, type Runner } from "./support.js";

// `kubeforge up` when things go wrong, over real SSH: each fault ends with an error naming the
// host (and the phase when one was running), in bounded time, and — where hosts were changed —
// with a report of which. Hosts that are never contacted successfully are never changed.

let bed: SshTestbed;
let r: Runner;

const FAST_JOIN = [
  "---",
  "apiVersion: kubeadm.k8s.io/v1beta4",
  "kind: JoinConfiguration",
  `nodeRegistration: {ignorePreflightErrors: ${TESTBED_PREFLIGHT_IGNORES}}`,
  "timeouts: {kubeletHealthCheck: 15s, tlsBootstrap: 30s}",
  "",
].join("\n");

beforeAll(async () => {
  bed = await createTestbed(["cp-1", "w-1", "w-2"], { ssh: true });
  r = await runner();
}, 120_000);

afterAll(async () => {
  await bed?.stop();
}, 120_000);

const hosts = () => ({
  controlPlanes: [bed.host("cp-1")],
  workers: [bed.host("w-1"), bed.host("w-2")],
});

async function upWith(text: string, name = "cluster.yaml") {
  const path = await r.writeClusterFile(text, name);
  const started = Date.now();
  const result = await r.kubeforge(
    ["up", "-f", path, "--kubeconfig", join(r.dir, `${name}.conf`)],
    300_000,
  );
  return { ...result, ms: Date.now() - started };
}

/**
 * Runs `op` while the host's service manager (the testbed's systemctl shim) refuses to start
 * the kubelet, as with a broken kubelet install; the shim is put back however `op` ends.
 */
async function withKubeletStartRefused<T>(h: SshTestHost, op: () => Promise<T>): Promise<T> {
  const shim = join(h.node.binDir, "systemctl");
  const original = await readFile(shim, "utf8");
  await writeFile(
    shim,
    original.replace(
      'case "$verb" in',
      'case "$verb" in\n  start|restart) echo "Failed to start kubelet.service: Unit is masked." >&2; exit 1;;',
    ),
  );
  await chmod(shim, 0o755);
  try {
    return await op();
  } finally {
    await writeFile(shim, original);
  }
}

/** Nothing of a cluster was written on the host. */
async function untouched(h: SshTestHost): Promise<void> {
  await expect(readFile(h.path("var/lib/kubeforge/node.json"))).rejects.toThrow();
  await expect(readFile(h.path("etc/kubernetes/kubelet.conf"))).rejects.toThrow();
}

describe("kubeforge up refuses before changing anything", () => {
  it("an unreachable host: named, with its address, after bounded retries", async () => {
    await bed.host("w-2").stopSsh();
    try {
      const res = await upWith(clusterFile({ name: "f1", ...hosts() }), "f1.yaml");
      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(
        /failed on 1 of 3 hosts:\n - w-2: .*ssh:\/\/root@[\d.]+:22.*refused/,
      );
      expect(res.ms).toBeLessThan(120_000);
    } finally {
      await bed.host("w-2").startSsh();
    }
    for (const h of bed.hosts) await untouched(h);
  }, 200_000);

  it("a wrong key: an authentication failure, tried once", async () => {
    const other = join(r.dir, "other_key");
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", other]);
    const text = clusterFile({ name: "f2", ...hosts() }).replace(
      /privateKeyFile: .*/,
      `privateKeyFile: ${other}`,
    );
    const res = await upWith(text, "f2.yaml");
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/failed on 3 of 3 hosts/);
    expect(res.stderr).toMatch(/cp-1: .*authentication/i);
    for (const h of bed.hosts) await untouched(h);
  }, 120_000);

  it("a host-key mismatch: both fingerprints shown", async () => {
    const wrong = bed.host("w-1").ssh.hostKeyFingerprint;
    const res = await upWith(
      clusterFile({
        name: "f3",
        ...hosts(),
        pinFor: (h) => (h.name === "w-2" ? wrong : h.ssh.hostKeyFingerprint),
      }),
      "f3.yaml",
    );
    expect(res.code).toBe(1);
    expect(res.stderr).toContain("failed on 1 of 3 hosts");
    expect(res.stderr).toContain(wrong);
    expect(res.stderr).toContain(bed.host("w-2").ssh.hostKeyFingerprint);
    for (const h of bed.hosts) await untouched(h);
  }, 120_000);

  it("sudo that wants a password: named, with what to do", async () => {
    const user = bed.host("w-1").ssh.passwordSudoUser;
    const text = clusterFile({ name: "f4", ...hosts() }).replace(
      `ssh://root@${bed.host("w-1").ssh.host}`,
      `ssh://${user}@${bed.host("w-1").ssh.host}`,
    );
    const res = await upWith(text, "f4.yaml");
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/w-1: .*sudo needs a password for user "kfpw".*sudoPassword/);
    for (const h of bed.hosts) await untouched(h);
  }, 120_000);

  it("a v1beta3 document for a label that resolves to v1.37: refused once the version is known", async () => {
    const text = clusterFile({ name: "f7", ...hosts() })
      .replace("kubernetesVersion: v1.35.0", "kubernetesVersion: stable")
      .replace(
        "apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration",
        "apiVersion: kubeadm.k8s.io/v1beta3\nkind: JoinConfiguration",
      );
    // The label cannot be fetched here: the version table answers it (v1.37, its newest).
    const saved = process.env.KUBEFORGE_RELEASE_BASE_URL;
    process.env.KUBEFORGE_RELEASE_BASE_URL = "http://127.0.0.1:1/release";
    let res;
    try {
      res = await upWith(text, "f7.yaml");
    } finally {
      if (saved === undefined) delete process.env.KUBEFORGE_RELEASE_BASE_URL;
      else process.env.KUBEFORGE_RELEASE_BASE_URL = saved;
    }
    expect(res.code).toBe(1);
    expect(res.stderr).toContain(
      "f7.yaml: JoinConfiguration uses kubeadm.k8s.io/v1beta3, which kubeadm no longer reads from Kubernetes v1.37 (v1.37 here)",
    );
    for (const h of bed.hosts) await untouched(h);
  }, 120_000);

  it("--dry-run connects, inspects, prints the plan per host, renders cp-1's init on the runner, and changes nothing", async () => {
    const path = await r.writeClusterFile(clusterFile({ name: "f5", ...hosts() }), "f5.yaml");
    const renderRoot = join(r.dir, "f5-rendered");
    const res = await r.kubeforge(["up", "-f", path, "--dry-run", "--dry-run-dir", renderRoot]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/^# cp-1 \(control-plane, .*\): init$/m);
    expect(res.stdout).toMatch(/^# w-2 \(worker, .*\): join$/m);
    expect(res.stdout).toContain("kind: JoinConfiguration");
    expect(res.stdout).toContain("<generated token>");
    expect(res.stdout).not.toMatch(/[a-z0-9]{6}\.[a-z0-9]{16}/);
    // cp-1's init as `kubeforge init --dry-run` renders it, with cp-1's address in the
    // serving certificate; the commands it would run on cp-1 are reported, not run.
    const etc = join(renderRoot, "cp-1", "etc/kubernetes");
    expect(res.stderr).toContain(`admin.conf is ${join(etc, "admin.conf")}`);
    expect(res.stderr).toMatch(/cp-1: \[dryrun\] Would run on cp-1: /);
    execFileSync("openssl", [
      "verify",
      "-CAfile",
      join(etc, "pki/ca.crt"),
      join(etc, "pki/apiserver.crt"),
    ]);
    const san = execFileSync(
      "openssl",
      ["x509", "-noout", "-ext", "subjectAltName", "-in", join(etc, "pki/apiserver.crt")],
      { encoding: "utf8" },
    );
    expect(san).toContain(`IP Address:${bed.host("cp-1").address}`);
    expect((await stat(join(etc, "pki/ca.key"))).mode & 0o777).toBe(0o600);
    expect(await readFile(join(etc, "manifests/kube-apiserver.yaml"), "utf8")).toContain(
      `--advertise-address=${bed.host("cp-1").address}`,
    );
    for (const h of bed.hosts) await untouched(h);

    // The same folder again: its cp-1 folder holds files now, and none of them is overwritten.
    const caBefore = await readFile(join(etc, "pki/ca.crt"), "utf8");
    const again = await r.kubeforge(["up", "-f", path, "--dry-run", "--dry-run-dir", renderRoot]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(
      `cannot render the init into ${join(renderRoot, "cp-1")}: the folder is not empty`,
    );
    expect(await readFile(join(etc, "pki/ca.crt"), "utf8")).toBe(caBefore);

    // --dry-run-dir alone is a mistake, refused before any host is contacted.
    const alone = await r.kubeforge(["up", "-f", path, "--dry-run-dir", renderRoot]);
    expect(alone.code).toBe(1);
    expect(alone.stderr).toContain("--dry-run-dir is only meaningful with --dry-run");
  }, 120_000);
});

describe("kubeforge up when a host fails half-way", () => {
  it("one worker failing: the others join, the report names the host and the phase, and a second up resumes", async () => {
    // w-2's service manager refuses to start the kubelet (a broken kubelet install).
    const text = clusterFile({ name: "f6", ...hosts() }).replace(
      /---\napiVersion: kubeadm.k8s.io\/v1beta4\nkind: JoinConfiguration\n.*\n$/,
      FAST_JOIN,
    );
    const res = await withKubeletStartRefused(bed.host("w-2"), () => upWith(text, "f6.yaml"));
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(
      /failed on 1 of 2 hosts:\n - w-2: error execution phase kubelet-(start|wait-bootstrap)/,
    );
    expect(res.stderr).toContain("WARNING: w-2: [up] join failed");
    const marker = (h: string) =>
      readFile(bed.host(h).path("var/lib/kubeforge/node.json"), "utf8").then(
        (t) => (JSON.parse(t) as { status: string }).status,
      );
    expect(await marker("cp-1")).toBe("done");
    expect(await marker("w-1")).toBe("done");
    expect(await marker("w-2")).toBe("started");

    // With the kubelet fixed, `up` again recognises cp-1 and w-1, resets w-2 and joins it.
    const again = await upWith(text, "f6.yaml");
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain("w-2: [reset] a previous run did not finish here: resetting");
    expect(again.stderr).toMatch(/\[up\] w-1: worker, .*already part of the cluster/);
    expect(await marker("w-2")).toBe("done");
  }, 600_000);

  it("the first control plane failing: the report names it and the phase; no worker is changed", async () => {
    // The cluster of the test before, started again from clean hosts.
    const text = clusterFile({ name: "f6", ...hosts() }).replace(
      "kind: InitConfiguration\n",
      "kind: InitConfiguration\ntimeouts: {kubeletHealthCheck: 10s}\n",
    );
    const path = await r.writeClusterFile(text, "f6.yaml");
    const clean = await r.kubeforge(["down", "-f", path]);
    expect(clean.code, clean.stderr).toBe(0);
    // cp-1's service manager refuses to start the kubelet: kubelet-start only warns (as
    // kubeadm's does), wait-control-plane fails when the kubelet never answers.
    const res = await withKubeletStartRefused(bed.host("cp-1"), () => upWith(text, "f6.yaml"));
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(
      /failed on 1 of 1 host:\n - cp-1: error execution phase wait-control-plane: the kubelet is not healthy after 10s/,
    );
    expect(res.stderr).toMatch(/^WARNING: cp-1: \[kubelet-start\] .*Unit is masked/m);
    await untouched(bed.host("w-1"));
    await untouched(bed.host("w-2"));
  }, 300_000);

  it("the connection dropped in the middle of a join: an error naming the host, no hang", async () => {
    const cli = await bundledCli();
    const path = await r.writeClusterFile(
      clusterFile({ name: "f6", ...hosts() }).replace(
        /---\napiVersion: kubeadm.k8s.io\/v1beta4\nkind: JoinConfiguration\n.*\n$/,
        FAST_JOIN,
      ),
      "f6.yaml",
    );
    // Reset w-1 over SSH so that `up` joins it again, and cut its connection mid-join.
    const reset = await r.kubeforge([
      "down",
      "-f",
      path,
      "--kubeconfig",
      join(r.dir, "f6.yaml.conf"),
    ]);
    expect(reset.code, reset.stderr).toBe(0);
    const child = spawn(process.execPath, [join(cli.dir, "cli.js"), "up", "-f", path], {
      env: { ...process.env, HOME: r.dir },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    let dropped = false;
    child.stderr.on("data", (b: Buffer) => {
      stderr += b.toString();
      if (!dropped && /w-1: \[kubelet-start\]/.test(stderr)) {
        dropped = true;
        void bed.host("w-1").dropSshSessions();
      }
    });
    const started = Date.now();
    const code = await new Promise<number | null>((res) => child.on("close", res));
    expect(dropped, stderr).toBe(true);
    expect(code).toBe(1);
    expect(Date.now() - started).toBeLessThan(240_000);
    expect(stderr).toMatch(
      / - w-1: error execution phase [a-z/-]+: .*connection (dropped|was closed|is closed)/,
    );
  }, 300_000);
});

describe("kubeforge up interrupted", () => {
  it("SIGINT (Ctrl-C, a cancelled CI job) cancels the commands running on the hosts and exits 130", async () => {
    const registry = await startStallingRegistry(bed.gateway);
    const cli = await bundledCli();
    const cp = bed.host("cp-1");
    const pulls = () => cp.sshOutput(registry.pullsCommand);
    // The earlier tests' cluster goes first: a host of another cluster is refused.
    if (existsSync(join(r.dir, "f6.yaml"))) {
      const previous = await r.kubeforge(["down", "-f", join(r.dir, "f6.yaml")]);
      expect(previous.code, previous.stderr).toBe(0);
    }
    // init's preflight pulls the control-plane images (root login): the registry stalls them.
    const path = await r.writeClusterFile(
      `${clusterFile({ name: "f7", controlPlanes: [cp], workers: [] })}---\n${imageRepositoryDocument(registry.repository)}`,
      "f7.yaml",
    );
    const child = spawn(process.execPath, [join(cli.dir, "cli.js"), "up", "-f", path], {
      env: { ...process.env, HOME: r.dir },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
    const closed = new Promise<number | null>((res) => child.on("close", res));
    try {
      await expect.poll(pulls, { timeout: 120_000, interval: 500 }).not.toBe("");
      const signalled = Date.now();
      child.kill("SIGINT");
      const code = await closed;
      expect(Date.now() - signalled, stderr).toBeLessThan(10_000);
      expect(code, stderr).toBe(130);
      expect(stderr).toContain(
        "kubeforge: SIGINT: cancelling the commands running on every host, then stopping",
      );
      expect(stderr).toMatch(
        /^interrupted by SIGINT: failed on 1 of 1 host:\n - cp-1: error execution phase preflight: cp-1 .*cancelled ".*crictl .* pull /m,
      );
      expect(await pulls()).toBe("");
    } finally {
      child.kill("SIGKILL");
      await registry.close();
    }
    // The host is left for the next `up` to reset (its init had started) or for `down`.
    const down = await r.kubeforge(["down", "-f", path]);
    expect(down.code, down.stderr).toBe(0);
  }, 300_000);
});
