import { execFile, spawn } from "node:child_process";
import { chmod, copyFile, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startReleaseServer, type ReleaseServer } from "../../support/release-server.js";
import { imageRepositoryDocument, startStallingRegistry } from "../../support/stalling-registry.js";
import { createTestbed, type SshTestbed, type SshTestHost } from "../../support/testbed.js";
import { SUDO_USER, sshClientArgv } from "../../support/testbed-ssh.js";
import {
  bundledMain,
  bundledPost,
  runStep,
  type RunStepOptions,
  stepReport,
  type StepResult,
  unmaskedLines,
} from "./support.js";

// The action's first user story, as close to a stock ubuntu-24.04 runner as this machine gets:
// main.js and post.js run *on* a testbed host (its own address, hostname and node folders) as a
// non-root user with password-less sudo, as the hosted runner's `runner` user is, and build a
// one-node cluster on that machine itself — no SSH to a node, every root-owned file through
// sudo. Node preparation is on: the binaries come from a local release server whose CA the
// step trusts through NODE_EXTRA_CA_CERTS (as a self-hosted runner behind a mirror would).

const NAME = "local";
let bed: SshTestbed;
let runner: SshTestHost;
let mainJs: string;
let postJs: string;
let server: ReleaseServer;
/** A folder every user reaches: the release server's CA and a copy of this Node. */
let shared: string;
let caFile: string;
let node: string;
let owner: { uid: number; gid: number };

/** The hosted runner's PATH, roughly: /usr/local/sbin (here the simulated node's shims) first. */
const RUNNER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** Inputs of this cluster: one node, this machine, prepared from the local release server. */
function inputs(over: Record<string, string> = {}): Record<string, string> {
  const d = server.sources;
  return {
    cluster: [
      "apiVersion: kubeforge.dev/v1alpha1",
      "kind: Cluster",
      "kubernetesVersion: v1.35.0",
      "nodes:",
      "- {name: runner, role: control-plane, host: local}",
      "prepare:",
      "  installPackages: false",
      `  downloads: {kubernetes: "${d.kubernetes}", crictl: "${d.crictl}", cniPlugins: "${d.cniPlugins}"}`,
      "",
    ].join("\n"),
    // What the testbed cannot be: the downloaded kubelet is a stand-in that prints no version,
    // and the host has no cgroup mount of its own. IsPrivilegedUser is checked: the runner's
    // user is root through sudo.
    "kubeadm-config": [
      "apiVersion: kubeadm.k8s.io/v1beta4",
      "kind: InitConfiguration",
      "nodeRegistration: {ignorePreflightErrors: [KubeletVersion, SystemVerification]}",
      "",
    ].join("\n"),
    name: NAME,
    "dry-run": "false",
    teardown: "auto",
    ...over,
  };
}

/** Runs a step's script on the runner host as the sudo user. */
function asRunnerUser(o: RunStepOptions): RunStepOptions {
  return {
    ...o,
    env: { PATH: RUNNER_PATH, NODE_EXTRA_CA_CERTS: caFile, ...o.env },
    elsewhere: {
      owner,
      node,
      launch: (script) => sshClientArgv(runner.ssh, bed.knownHostsFile, SUDO_USER, `sh ${script}`),
    },
  };
}

const onRunner = (command: string) => runner.sshOutput(command, { timeoutMs: 60_000 });

function kubectl(kubeconfig: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(
      "kubectl",
      ["--kubeconfig", kubeconfig, "--request-timeout", "20s", ...args],
      { env: { PATH: process.env.PATH, HOME: dirname(kubeconfig) }, timeout: 60_000 },
      (error, stdout, stderr) => (error ? reject(new Error(stderr)) : resolve(stdout)),
    ),
  );
}

beforeAll(async () => {
  [bed, mainJs, postJs] = await Promise.all([
    createTestbed(["runner"], { ssh: true }),
    bundledMain(),
    bundledPost(),
  ]);
  runner = bed.host("runner");
  server = await startReleaseServer({ address: bed.gateway });
  // The checkout may sit in a folder only root enters (a fresh clone in a 0700 mktemp -d).
  shared = await mkdtemp(join(tmpdir(), "kubeforge-local-shared-"));
  await chmod(shared, 0o755);
  caFile = join(shared, "release-ca.pem");
  await writeFile(caFile, server.ca, { mode: 0o644 });
  node = join(shared, "node");
  await copyFile(process.execPath, node);
  await chmod(node, 0o755);
  const [uid, gid] = (await runner.sshRun("id -u; id -g", { user: SUDO_USER })).stdout
    .trim()
    .split("\n")
    .map(Number);
  owner = { uid: uid!, gid: gid! };
}, 240_000);

afterAll(async () => {
  await bed?.stop();
  await server?.close();
  if (shared) await rm(shared, { recursive: true, force: true });
}, 120_000);

describe("action on the runner itself, as a non-root user with sudo", () => {
  let main: StepResult;

  it("a port the control plane needs is taken: refused before preparation changes the machine", async () => {
    // Something listens on kube-controller-manager's port inside the runner's namespace.
    const squatter = spawn(
      "ip",
      [
        "netns",
        "exec",
        runner.ns,
        "python3",
        "-c",
        "import socket,time\ns=socket.socket()\ns.bind(('0.0.0.0',10257))\ns.listen()\nprint('up',flush=True)\ntime.sleep(300)",
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    try {
      await new Promise<void>((resolve, reject) => {
        squatter.stdout.once("data", () => resolve());
        squatter.once("exit", (code) => reject(new Error(`the listener exited (${code})`)));
      });
      const downloads = server.requests.length;
      const step = await runStep(mainJs, asRunnerUser({ inputs: inputs(), timeoutMs: 300_000 }));
      expect(step.code).toBe(1);
      expect(step.stdout).toMatch(
        /^::error::.*error execution phase preflight: .*Port 10257 is in use/m,
      );
      expect(step.stdout).toContain("::group::preflight (before preparation)");
      // Nothing was prepared: no download, no group, no kubelet installed.
      expect(step.stdout).not.toContain("::group::prepare");
      expect(server.requests.slice(downloads)).toEqual([]);
    } finally {
      squatter.kill("SIGKILL");
    }
  }, 360_000);

  it("prepares this machine and builds a one-node cluster; later steps reach it", async () => {
    main = await runStep(mainJs, asRunnerUser({ inputs: inputs(), timeoutMs: 500_000 }));
    if (main.code !== 0) throw new Error(stepReport(main));

    // Outputs: the runner's own copy of admin.conf, owned by the runner's user, 0600.
    const stateDir = join(main.runnerTemp, `kubeforge-${NAME}`);
    const kubeconfig = join(stateDir, "admin.conf");
    expect(main.outputs.get("kubeconfig")).toBe(kubeconfig);
    expect(main.env.get("KUBECONFIG")).toBe(kubeconfig);
    const st = await stat(kubeconfig);
    expect([st.uid, st.mode & 0o777]).toEqual([owner.uid, 0o600]);
    expect(main.outputs.get("api-server")).toBe(`https://${runner.address}:6443`);
    expect(JSON.parse(main.outputs.get("nodes")!)).toEqual([
      { name: "runner", role: "control-plane", address: runner.address, action: "init" },
    ]);
    // Nothing the step left in RUNNER_TEMP belongs to root (the runner could not clean it up).
    const entries = await readdir(main.runnerTemp, { recursive: true });
    for (const e of entries) {
      expect((await stat(join(main.runnerTemp, e))).uid, e).toBe(owner.uid);
    }

    // Node preparation ran here through sudo, with the downloads trusted by NODE_EXTRA_CA_CERTS.
    const kubeletPath = "/dl/release/v1.35.0/bin/linux/amd64/kubelet";
    expect(server.hits(kubeletPath)).toBe(1);
    expect(await onRunner("sha256sum < /usr/local/bin/kubelet | cut -d' ' -f1")).toBe(
      `${(await server.payload(`${kubeletPath}.sha256`)).toString().trim()}\n`,
    );
    expect(
      await onRunner("stat -c '%U %a' /etc/kubernetes/admin.conf /etc/containerd/config.toml"),
    ).toBe("root 600\nroot 644\n");

    // A later step: kubectl with the exported KUBECONFIG sees the node Ready.
    const nodes = JSON.parse(await kubectl(kubeconfig, ["get", "nodes", "-o", "json"])) as {
      items: {
        metadata: { name: string };
        status: { conditions: { type: string; status: string }[] };
      }[];
    };
    expect(
      nodes.items.map((n) => [
        n.metadata.name,
        n.status.conditions.find((c) => c.type === "Ready")?.status,
      ]),
    ).toEqual([["runner", "True"]]);

    // The admin credentials were registered before anything printed them.
    const clientKey = /client-key-data: (\S+)/.exec(await readFile(kubeconfig, "utf8"))![1]!;
    expect(unmaskedLines(main.stdout, clientKey)).toEqual([]);
  }, 600_000);

  /** post.js after the job's steps, with main's saved state (as STATE_*) and the same inputs. */
  async function post(
    over: Record<string, string>,
    runnerEnvironment = "github-hosted",
  ): Promise<StepResult> {
    const state: Record<string, string> = { RUNNER_ENVIRONMENT: runnerEnvironment };
    for (const [k, v] of main.state) state[`STATE_${k}`] = v;
    const step = await runStep(
      postJs,
      asRunnerUser({
        inputs: inputs(over),
        runnerTemp: main.runnerTemp,
        env: state,
        timeoutMs: 300_000,
      }),
    );
    if (step.code !== 0) throw new Error(stepReport(step));
    return step;
  }

  it("post, teardown auto on a GitHub-hosted runner: the runner itself is left alone", async () => {
    expect(main?.code).toBe(0);
    const step = await post({ teardown: "auto" });
    expect(step.stdout).toContain("kubeforge: teardown auto keeps runner (local)");
    expect((await runner.daemonPids()).kubelet).toBeDefined();
    expect(await readdir(runner.path("etc/kubernetes/manifests"))).toContain("etcd.yaml");
  }, 300_000);

  it("post after a later step failed: diagnostics of this machine through sudo", async () => {
    expect(main?.code).toBe(0);
    const step = await post({ teardown: "auto", "job-status": "failure" });
    const diagDir = join(main.runnerTemp, `kubeforge-${NAME}-diagnostics`);
    const files = await readdir(diagDir, { recursive: true });
    expect(files).toEqual(
      expect.arrayContaining([
        "runner/kubelet.log",
        "runner/crictl-ps.txt",
        "runner/manifests/kube-apiserver.yaml",
        "runner/containers/kube-apiserver.log",
      ]),
    );
    // The control plane's container logs come from the runtime (crictl logs), not a placeholder.
    for (const c of ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"]) {
      const log = await readFile(join(diagDir, `runner/containers/${c}.log`), "utf8");
      expect(log, c).toMatch(
        /^# \S*crictl --runtime-endpoint \S+ logs --tail 1000 [0-9a-f]{32,}\n/,
      );
      expect(log.split("\n").length, c).toBeGreaterThan(2); // the header and a line at least
    }
    // etcd is the real one (Debian's): its own start-up lines.
    expect(await readFile(join(diagDir, "runner/containers/etcd.log"), "utf8")).toMatch(
      /etcdmain: etcd Version: \d+\.\d+/,
    );
    // Root-owned node files were read through sudo; the copies are the runner user's.
    expect(await readFile(join(diagDir, "runner/manifests/etcd.yaml"), "utf8")).toBe(
      await readFile(runner.path("etc/kubernetes/manifests/etcd.yaml"), "utf8"),
    );
    for (const f of files) expect((await stat(join(diagDir, f))).uid, f).toBe(owner.uid);
    expect(step.stdout).toContain("a later step of the job failed");
  }, 300_000);

  // teardown: always takes the same path for a local node (teardown-scope.test.ts has the scopes).
  it("post, teardown auto on a self-hosted runner: this machine is reset for the next job", async () => {
    expect(main?.code).toBe(0);
    const step = await post({ teardown: "auto" }, "self-hosted");
    expect(step.stdout).toContain("teardown auto resets it too");
    expect(step.stdout).not.toContain("teardown auto keeps");
    expect(step.stdout).toContain("kubeforge: reset runner");
    expect((await runner.daemonPids()).kubelet).toBeUndefined();
    expect(await readdir(runner.path("etc/kubernetes/manifests")).catch(() => [])).toEqual([]);
  }, 300_000);

  it("a main that fails after preparation ends the image pulls it started instead of waiting for them", async () => {
    const registry = await startStallingRegistry(bed.gateway);
    try {
      const step = await runStep(
        mainJs,
        asRunnerUser({
          inputs: inputs({
            // Preflight fails (the stand-in kubelet prints no version) while the pulls hang.
            "kubeadm-config": imageRepositoryDocument(registry.repository),
          }),
          // The pulls' own time limit is 15 minutes: a step that waited for them would not end.
          timeoutMs: 240_000,
        }),
      );
      expect(step.code, stepReport(step)).not.toBe(0);
      expect(step.stdout).toMatch(/error execution phase preflight: .*KubeletVersion/s);
      expect(registry.connections).toBeGreaterThan(0);
      // No pull outlived the step.
      const pulls = await onRunner(registry.pullsCommand);
      expect(pulls).toBe("");
    } finally {
      await registry.close();
    }
  }, 300_000);

  it("a main step the runner interrupts (the job cancelled) ends the commands it ran, and fails saying so", async () => {
    const registry = await startStallingRegistry(bed.gateway);
    const pulls = () => onRunner(registry.pullsCommand);
    try {
      // Preflight passes; init then waits for the node's images, which the registry stalls.
      const step = runStep(
        mainJs,
        asRunnerUser({
          inputs: inputs({
            "kubeadm-config": `${inputs()["kubeadm-config"]}---\n${imageRepositoryDocument(registry.repository)}`,
          }),
          timeoutMs: 240_000,
        }),
      );
      await expect.poll(pulls, { timeout: 120_000, interval: 500 }).not.toBe("");
      // What the runner does when a job is cancelled: SIGINT to the step's process.
      const signalled = Date.now();
      await onRunner(`pkill -INT -u ${owner.uid} -f '^${node} ${mainJs}$'`);
      const result = await step;
      expect(Date.now() - signalled, stepReport(result)).toBeLessThan(10_000);
      expect(result.code, stepReport(result)).not.toBe(0);
      expect(result.stdout).toContain(
        "kubeforge: SIGINT: cancelling the commands running on every host, then stopping",
      );
      expect(result.stdout).toMatch(/^::error::interrupted by SIGINT: .*cancelled/m);
      expect(result.state.get("outcome")).toBe("failure");
      expect(await pulls()).toBe("");
    } finally {
      await registry.close();
    }
  }, 300_000);
});
