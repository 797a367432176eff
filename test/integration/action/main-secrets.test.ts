import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { copyFile, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestbed, type SshTestbed, type SshTestHost } from "../../support/testbed.js";
import { clusterFile } from "../up/support.js";
import {
  bundledMain,
  bundledPost,
  filesOf,
  runStep,
  stepReport,
  type StepResult,
  unmaskedLines,
} from "./support.js";

// Credentials written into an inline `cluster` input rather than given through ssh-private-key:
// an encrypted ssh.privateKey with its ssh.passphrase, ssh.password and ssh.sudoPassword (the
// node logs in as the testbed user whose sudo asks for a password). The main step builds the
// cluster with them and the post step collects diagnostics and tears it down with them; every
// one is registered with the runner (each line of the key too) before anything is printed, and
// none is in the log, the summary, the saved state, the outputs, the environment or the
// diagnostics — not even when a node's file holds one.

const NAME = "secrets";
let bed: SshTestbed;
let cp: SshTestHost;
let mainJs: string;
let postJs: string;
let work: string;
/** The testbed key, encrypted with `passphrase`. */
let encryptedKey: string;
const passphrase = `pp-${randomBytes(12).toString("hex")}`;
/** Never used to log in (the key is offered first) but secret all the same. */
const loginPassword = `pw-${randomBytes(12).toString("hex")}`;
/** The testbed user's sudo password. */
let sudoPassword: string;

function clusterInput(): string {
  return clusterFile({
    name: NAME,
    controlPlanes: [cp],
    workers: [],
    userFor: (h) => h.ssh.passwordSudoUser,
    ssh: [
      "privateKey: |",
      ...encryptedKey
        .trimEnd()
        .split("\n")
        .map((l) => `  ${l}`),
      `passphrase: "${passphrase}"`,
      `password: "${loginPassword}"`,
      `sudoPassword: "${sudoPassword}"`,
    ],
  }).replace(/^ {2}privateKeyFile: .*\n/m, "");
}

/** The secrets, and each line of the key long enough to mean something on its own. */
function secrets(): string[] {
  const keyLines = encryptedKey.split("\n").filter((l) => l.length > 20 && !l.startsWith("-----"));
  expect(keyLines.length).toBeGreaterThan(3);
  return [passphrase, loginPassword, sudoPassword, ...keyLines];
}

/** Nothing a step wrote holds a secret; none is printed where the runner would not mask it. */
function expectNoSecretIn(step: StepResult, files: Record<string, string>): void {
  const written: Record<string, string> = {
    ...files,
    stderr: step.stderr,
    GITHUB_STATE: step.stateFile,
    GITHUB_ENV: [...step.env.values()].join("\n"),
    GITHUB_OUTPUT: [...step.outputs.values()].join("\n"),
    summary: step.summary,
  };
  for (const s of secrets()) {
    expect(unmaskedLines(step.stdout, s), s.slice(0, 8)).toEqual([]);
    for (const [what, text] of Object.entries(written)) {
      expect(text.includes(s), `${what} holds ${s.slice(0, 8)}...`).toBe(false);
    }
  }
}

beforeAll(async () => {
  [bed, mainJs, postJs] = await Promise.all([
    createTestbed(["cp-1"], { ssh: true }),
    bundledMain(),
    bundledPost(),
  ]);
  cp = bed.host("cp-1");
  sudoPassword = cp.ssh.password;
  work = await mkdtemp(join(tmpdir(), "kubeforge-secrets-"));
  const keyFile = join(work, "id_ed25519");
  await copyFile(cp.ssh.privateKeyFile, keyFile);
  await promisify(execFile)("ssh-keygen", ["-q", "-p", "-P", "", "-N", passphrase, "-f", keyFile]);
  encryptedKey = await readFile(keyFile, "utf8");
  expect(encryptedKey).toContain("BEGIN OPENSSH PRIVATE KEY");
}, 180_000);

afterAll(async () => {
  await bed?.stop();
  if (work) await rm(work, { recursive: true, force: true });
}, 120_000);

describe("action: credentials inside an inline cluster input", () => {
  let main: StepResult;

  it("main: builds the cluster with them, registers each before printing, writes none", async () => {
    main = await runStep(mainJs, { inputs: { cluster: clusterInput() }, timeoutMs: 400_000 });
    if (main.code !== 0) throw new Error(stepReport(main));
    // sudo on the node went through the password: the control plane is there.
    expect(await readdir(cp.path("etc/kubernetes/manifests"))).toContain("kube-apiserver.yaml");
    for (const s of [passphrase, loginPassword, sudoPassword]) expect(main.masks).toContain(s);
    for (const line of encryptedKey.split("\n").filter((l) => l.trim() !== "")) {
      expect(main.masks).toContain(line.trim());
    }
    const stateDir = main.state.get("state-dir")!;
    expect(stateDir).toBe(join(main.runnerTemp, `kubeforge-${NAME}`));
    expectNoSecretIn(main, await filesOf(stateDir));
  }, 420_000);

  it("post: diagnostics through the sudo password, the secrets cut from every file", async () => {
    expect(main?.code).toBe(0);
    // A node file holding the credentials, as a careless script on the node could leave it.
    await writeFile(
      cp.path("etc/kubernetes/manifests/notes.yaml"),
      `passphrase: ${passphrase}\nlogin: ${loginPassword}\nsudo: ${sudoPassword}\nkey: |\n${encryptedKey
        .split("\n")
        .map((l) => `  ${l}`)
        .join("\n")}\n`,
    );
    const state: Record<string, string> = {};
    for (const [k, v] of main.state) state[`STATE_${k}`] = v;
    const post = await runStep(postJs, {
      inputs: { cluster: clusterInput(), teardown: "auto", "job-status": "failure" },
      runnerTemp: main.runnerTemp,
      env: state,
      timeoutMs: 300_000,
    });
    if (post.code !== 0) throw new Error(stepReport(post));
    for (const s of [passphrase, loginPassword, sudoPassword]) expect(post.masks).toContain(s);
    const files = await filesOf(join(main.runnerTemp, `kubeforge-${NAME}-diagnostics`));
    // Collected as root through sudo with the password: the root-only manifests are there.
    expect(files["cp-1/manifests/kube-apiserver.yaml"]).toContain("kube-apiserver");
    expect(files["cp-1/manifests/notes.yaml"]).toContain("passphrase:");
    expect(files["kubeforge.log"]).toContain(`cluster "${NAME}"`);
    expectNoSecretIn(post, files);
    // teardown auto: the node is reset, through the sudo password too.
    expect(post.stdout).toContain("kubeforge: reset cp-1");
    expect(await readdir(cp.path("etc/kubernetes/manifests")).catch(() => [])).toEqual([]);
  }, 320_000);
});

describe("action: the same credentials through the secret inputs", () => {
  /** The Cluster without any credential: the inputs bring them all. */
  const bareCluster = () =>
    clusterFile({
      name: NAME,
      controlPlanes: [cp],
      workers: [],
      userFor: (h) => h.ssh.passwordSudoUser,
    }).replace(/^ {2}privateKeyFile: .*\n/m, "");
  const secretInputs = () => ({
    "ssh-private-key": encryptedKey,
    "ssh-private-key-passphrase": passphrase,
    "ssh-password": loginPassword,
    "ssh-sudo-password": sudoPassword,
  });

  it("a dry run logs in with the encrypted key, reads the node through sudo, and prints none", async () => {
    const step = await runStep(mainJs, {
      inputs: { cluster: bareCluster(), "dry-run": "true", ...secretInputs() },
      timeoutMs: 120_000,
    });
    if (step.code !== 0) throw new Error(stepReport(step));
    expect(JSON.parse(step.outputs.get("nodes")!)).toEqual([
      expect.objectContaining({ name: "cp-1", action: "init" }),
    ]);
    for (const s of [passphrase, loginPassword, sudoPassword]) expect(step.masks).toContain(s);
    expectNoSecretIn(step, await filesOf(join(step.runnerTemp, `kubeforge-${NAME}`)));
  }, 180_000);

  it("without ssh-sudo-password, the node's sudo is named with what to set", async () => {
    const { "ssh-sudo-password": _omitted, ...rest } = secretInputs();
    const step = await runStep(mainJs, {
      inputs: { cluster: bareCluster(), "dry-run": "true", ...rest },
      timeoutMs: 120_000,
    });
    expect(step.code).not.toBe(0);
    expect(step.stdout).toMatch(/cp-1: .*sudo needs a password for user "kfpw"/);
    expectNoSecretIn(step, {});
  }, 180_000);
});
