import { mkdir, readdir, readFile, stat, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { startArtifactService } from "../../support/artifact-service.js";
import { testDir } from "../../support/temp-dir.js";
import { createTestbed, type SshTestbed, type SshTestHost } from "../../support/testbed.js";
import { clusterFile, diagnostics, runner, type Runner } from "../up/support.js";
import { bundledPost, filesOf, runStep, type StepResult, unmaskedLines } from "./support.js";

// The action's post step (post.js bundled from the current sources) run as the runner runs it
// after the main step: the same INPUT_* variables, the main step's saved state as STATE_*
// variables, RUNNER_TEMP in a temporary folder. The cluster is built by `kubeforge up` over real
// SSH on two testbed hosts against the simulated control plane; the post step then collects
// diagnostics (main failed or crashed) and tears down what the `teardown` input says.

const NAME = "diag";
let bed: SshTestbed;
let r: Runner;
let postJs: string;
let privateKey: string;
let clusterPath: string;
/** What the action's inputs carry: the same nodes, credentials from inputs. */
let clusterInput: string;
/** Secrets the cluster holds, gathered while it runs. */
const secrets: string[] = [];

async function up(): Promise<void> {
  const kubeconfig = join(r.dir, "admin.conf");
  const result = await r.kubeforge(["up", "-f", clusterPath, "--kubeconfig", kubeconfig]);
  if (result.code !== 0) throw new Error(await diagnostics(bed, result));
  const adminConf = await readFile(kubeconfig, "utf8");
  const clientKey = /client-key-data: (\S+)/.exec(adminConf)![1]!;
  secrets.push(clientKey, ...pemBody(Buffer.from(clientKey, "base64").toString()));
  const list = await r.kubectl<{ items: { type: string; data: Record<string, string> }[] }>(
    kubeconfig,
    ["-n", "kube-system", "get", "secrets"],
  );
  for (const s of list.items.filter((i) => i.type === "bootstrap.kubernetes.io/token")) {
    secrets.push(Buffer.from(s.data["token-secret"]!, "base64").toString());
  }
}

const pemBody = (pem: string) =>
  pem.split("\n").filter((l) => l.length > 20 && !l.startsWith("-----"));

interface PostRun {
  teardown: string;
  /** The main step's saved outcome; undefined = main never saved one (it crashed). */
  outcome?: "success" | "failure";
  env?: NodeJS.ProcessEnv;
  /** kubeforge's log as the main step left it. */
  log?: string;
  /** Other files the main step left in its state folder (an upgrade's report). */
  files?: Record<string, string>;
}

async function post(o: PostRun): Promise<StepResult & { diagDir: string }> {
  const runnerTemp = await testDir("kubeforge-post-temp-");
  const stateDir = join(runnerTemp, `kubeforge-${NAME}`);
  if (o.log !== undefined) {
    await mkdir(stateDir, { recursive: true });
    await writeFile(join(stateDir, "kubeforge.log"), o.log);
  }
  for (const [name, text] of Object.entries(o.files ?? {})) {
    await mkdir(stateDir, { recursive: true });
    await writeFile(join(stateDir, name), text);
  }
  const step = await runStep(postJs, {
    inputs: {
      cluster: clusterInput,
      name: NAME,
      teardown: o.teardown,
      "ssh-private-key": privateKey,
      "ssh-host-key-fingerprints": bed.hosts.map((h) => h.ssh.hostKeyFingerprint).join("\n"),
      "dry-run": "false",
    },
    runnerTemp,
    env: {
      "STATE_state-dir": stateDir,
      STATE_phase: "join",
      // The main step reached both hosts.
      "STATE_hosts-reached": "cp-1,w-1",
      ...(o.outcome ? { STATE_outcome: o.outcome } : {}),
      ...o.env,
    },
    timeoutMs: 300_000,
  });
  return { ...step, diagDir: join(runnerTemp, `kubeforge-${NAME}-diagnostics`) };
}

const exists = (p: string) =>
  stat(p).then(
    () => true,
    () => false,
  );

/** What `down` removes: the static pod manifests and kubeforge's node marker. */
async function clusterState(h: SshTestHost) {
  return {
    manifests: await readdir(h.path("etc/kubernetes/manifests")).catch(() => []),
    marker: await exists(h.path("var/lib/kubeforge/node.json")),
    kubelet: (await h.daemonPids()).kubelet !== undefined,
  };
}

function failureReport(step: StepResult): string {
  return `exit ${step.code}\n--- stdout\n${step.stdout.slice(-8000)}\n--- stderr\n${step.stderr.slice(-3000)}`;
}

/** No secret in any collected file, and none the runner would print unmasked. */
function expectNoSecret(step: StepResult, files: Record<string, string>) {
  const all = [...secrets, ...pemBody(privateKey)];
  expect(all.length).toBeGreaterThan(5);
  for (const [name, text] of Object.entries(files)) {
    for (const s of all) expect(text.includes(s), `${name} holds a secret`).toBe(false);
  }
  for (const s of all) expect(unmaskedLines(step.stdout, s)).toEqual([]);
  for (const s of all) expect(step.stderr).not.toContain(s);
}

beforeAll(async () => {
  [bed, r, postJs] = await Promise.all([
    createTestbed(["cp-1", "w-1"], { ssh: true }),
    runner(),
    bundledPost(),
  ]);
  privateKey = await readFile(bed.hosts[0]!.ssh.privateKeyFile, "utf8");
  const text = clusterFile({
    name: NAME,
    controlPlanes: [bed.host("cp-1")],
    workers: [bed.host("w-1")],
  });
  clusterPath = await r.writeClusterFile(text);
  // The action's form: the key and the pins come from their inputs.
  clusterInput = await r.writeClusterFile(
    text
      .replace(/^ {2}privateKeyFile: .*\n/m, "")
      .replace(/, ssh: \{hostKeyFingerprints: \["[^"]*"\]\}/g, ""),
    "cluster-action.yaml",
  );
  await up();
}, 600_000);

afterAll(async () => {
  await bed?.stop();
}, 120_000);

describe("action post step over SSH", () => {
  it("main crashed, teardown never: diagnostics of every node, no secret, hosts untouched", async () => {
    // Secrets planted where a careless node could hold them: a stray kubeconfig-like manifest
    // and a key in the manifests folder, a leaked key in kubeforge's own log.
    const cp = bed.host("cp-1");
    const token = `abcdef.${secrets.at(-1)}`;
    await writeFile(
      cp.path("etc/kubernetes/manifests/debug.yaml"),
      `kind: Config\nusers:\n- user:\n    token: ${token}\n    client-key-data: ${secrets[0]}\n`,
    );
    await writeFile(cp.path("etc/kubernetes/manifests/leftover.key"), privateKey);
    const before = await Promise.all(bed.hosts.map(clusterState));
    const step = await post({
      teardown: "never",
      log: `[init] starting\nWARNING: leaked ${privateKey}\n[join] failed\n`,
    });
    if (step.code !== 0) throw new Error(failureReport(step));
    expect(step.stdout).toContain("the main step did not finish (in join)");
    const files = await filesOf(step.diagDir);

    for (const node of ["cp-1", "w-1"]) {
      // The kubelet's story: journald has nothing here, so the service manager's view.
      expect(files[`${node}/kubelet.log`]).toContain("journald has no kubelet entries");
      expect(files[`${node}/kubelet.log`]).toMatch(/kubelet\.service .*\n\s+Loaded: loaded/);
      expect(files[`${node}/crictl-ps.txt`]).toMatch(/--runtime-endpoint unix:\/\/\S+ ps -a\n/);
      expect(files[`${node}/crictl-ps.txt`]).toMatch(/^CONTAINER\s+IMAGE/m);
      expect(files[`${node}/kubelet/config.yaml`]).toContain("kind: KubeletConfiguration");
      expect(files[`${node}/kubelet/kubeadm-flags.env`]).toContain("KUBELET_KUBEADM_ARGS=");
      expect(JSON.parse(files[`${node}/kubeforge-node.json`]!)).toMatchObject({
        cluster: NAME,
        node,
        status: "done",
      });
    }
    // The control plane's container logs, from the runtime; the worker runs none of them.
    for (const c of ["kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler"]) {
      expect(files[`cp-1/containers/${c}.log`]).toMatch(/^# \S*crictl .* logs --tail 1000 \w+\n./);
      expect(files[`w-1/containers/${c}.log`]).toMatch(
        new RegExp(`could not be collected: the container runtime has no ${c} container`),
      );
    }
    // The control plane's static pods, read back; the worker has none, and says so.
    expect(files["cp-1/crictl-ps.txt"]).toMatch(/kube-apiserver/);
    for (const m of ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"]) {
      expect(files[`cp-1/manifests/${m}.yaml`]).toBe(
        await readFile(cp.path(`etc/kubernetes/manifests/${m}.yaml`), "utf8"),
      );
    }
    expect(files["cp-1/manifests/debug.yaml"]).toContain("token: <redacted>");
    expect(files["cp-1/manifests/leftover.key"]).toBeUndefined();
    expect(files["w-1/manifests/README.txt"]).toMatch(/manifests has no files/);
    // kubeforge's own log, with the leaked key cut out.
    expect(files["kubeforge.log"]).toContain("[join] failed");
    expectNoSecret(step, files);

    // Each node's tail in a group of its own; untrusted lines cannot issue workflow commands.
    for (const node of ["cp-1", "w-1"]) {
      expect(step.stdout).toContain(`::group::kubeforge diagnostics: ${node}`);
    }
    expect(step.stdout).toMatch(/::stop-commands::[0-9a-f]{32}/);
    // Not on GitHub: no upload, a notice saying where the folder is.
    expect(step.stdout).toContain(`::notice::kubeforge: the diagnostics are in ${step.diagDir}`);
    // teardown: never
    expect(await Promise.all(bed.hosts.map(clusterState))).toEqual(before);
    expect(before.every((s) => s.marker && s.kubelet)).toBe(true);
  }, 300_000);

  it("main failed, on GitHub: the diagnostics are uploaded and the summary links them", async () => {
    const service = await startArtifactService();
    onTestFinished(() => service.close());
    const step = await post({
      teardown: "never",
      outcome: "failure",
      env: {
        ACTIONS_RUNTIME_TOKEN: service.token,
        ACTIONS_RESULTS_URL: service.url,
        GITHUB_SERVER_URL: "https://github.com",
        GITHUB_REPOSITORY: "octo/app",
        GITHUB_RUN_ID: "9001",
      },
    });
    if (step.code !== 0) throw new Error(failureReport(step));
    expect(step.stdout).not.toMatch(/::warning::/);
    // The service received the zip of the folder.
    expect(service.artifacts.map((a) => a.name)).toEqual([`kubeforge-${NAME}-diagnostics`]);
    const [artifact] = service.artifacts;
    expect(artifact!.bytes.subarray(0, 4)).toEqual(Buffer.from("PK\x03\x04", "latin1"));
    for (const f of ["cp-1/kubelet.log", "w-1/crictl-ps.txt"]) {
      expect(artifact!.bytes.includes(f), f).toBe(true);
    }
    // The post step's summary: why, and the artifact's page.
    expect(step.summary).toContain(`kubeforge: diagnostics of cluster ${NAME}`);
    expect(step.summary).toContain("Collected because the main step failed (in join)");
    expect(step.summary).toContain(
      `<a href="https://github.com/octo/app/actions/runs/9001/artifacts/${artifact!.id}">kubeforge-${NAME}-diagnostics</a>`,
    );
    expect(step.summary).not.toContain(dirname(step.runnerTemp));
    expectNoSecret(step, { summary: step.summary });
  }, 300_000);

  it("main failed, teardown auto: diagnostics, a failed upload is a warning, hosts clean", async () => {
    // A failed upgrade (upgrade-to) left its report and JUnit; an error in it quotes a key.
    const report = `{"kind": "UpgradeReport", "result": "failed", "error": "leaked ${privateKey.replace(/\n/g, "\\n")}"}\n`;
    const junit = `<testsuites name="kubeforge upgrade"/>\n`;
    const step = await post({
      teardown: "auto",
      outcome: "failure",
      files: { "upgrade-report.json": report, "junit-upgrade.xml": junit, "admin.conf": "x" },
      // On GitHub in appearance, with a runtime token the results service does not accept.
      env: { ACTIONS_RUNTIME_TOKEN: "not-a-jwt", ACTIONS_RESULTS_URL: "http://127.0.0.1:9/" },
    });
    if (step.code !== 0) throw new Error(failureReport(step));
    expect(step.stdout).toContain("the main step failed (in join)");
    const files = await filesOf(step.diagDir);
    expect(Object.keys(files)).toContain("cp-1/kubelet.log");
    expect(Object.keys(files)).toContain("w-1/crictl-ps.txt");
    // The upgrade's report goes with the nodes' logs; nothing else of the state folder does.
    expect(files["upgrade-report.json"]).toContain('"kind": "UpgradeReport"');
    expect(files["junit-upgrade.xml"]).toBe(junit);
    expect(files["admin.conf"]).toBeUndefined();
    expect(step.stdout).toMatch(/::warning::kubeforge: the diagnostics could not be uploaded/);
    expectNoSecret(step, files);
    expect(step.stdout).toContain("kubeforge: reset cp-1, w-1");
    for (const h of bed.hosts) {
      expect(await clusterState(h), h.name).toEqual({
        manifests: [],
        marker: false,
        kubelet: false,
      });
    }
  }, 300_000);

  it("main succeeded: no diagnostics; teardown auto resets only this cluster's hosts", async () => {
    await up();
    // w-1 now looks like another cluster's node: the post step must leave it alone.
    const w1 = bed.host("w-1");
    const marker = JSON.parse(await readFile(w1.path("var/lib/kubeforge/node.json"), "utf8")) as {
      cluster: string;
    };
    marker.cluster = "someone-else";
    await writeFile(w1.path("var/lib/kubeforge/node.json"), JSON.stringify(marker));
    const step = await post({ teardown: "auto", outcome: "success" });
    if (step.code !== 0) throw new Error(failureReport(step));
    expect(await exists(step.diagDir)).toBe(false);
    expect(step.stdout).not.toContain("kubeforge diagnostics");
    expect(step.stdout).toContain('w-1: left alone: it belongs to the cluster "someone-else"');
    expect(step.stdout).toContain("kubeforge: reset cp-1");
    expect(await clusterState(bed.host("cp-1"))).toEqual({
      manifests: [],
      marker: false,
      kubelet: false,
    });
    const w = await clusterState(w1);
    expect(w.marker && w.kubelet).toBe(true);
    expect(step.stdout).not.toContain("::warning::");
  }, 600_000);
});
