import { generateKeyPairSync } from "node:crypto";
import { lstat, mkdir, readdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { fileDir } from "../../support/temp-dir.js";
import { bundledMain, runStep } from "./support.js";

// Bad inputs: the bundled main.js fails the step with one sentence naming the input, before any
// host is contacted (no log group opened), and records the failure for the post step.

let mainJs: string;
beforeAll(async () => {
  mainJs = await bundledMain();
}, 120_000);

/** A well-formed key; it is never used (no host is contacted). */
const KEY = generateKeyPairSync("ed25519")
  .privateKey.export({ type: "pkcs8", format: "pem" })
  .toString();
const PIN = `SHA256:${"A".repeat(43)}`;
/** An SSH cluster whose host refuses connections: reaching `connect` would be the bug. */
const sshCluster = [
  "apiVersion: kubeforge.dev/v1alpha1",
  "kind: Cluster",
  "name: bad",
  "nodes:",
  `- {name: n1, role: control-plane, host: "ssh://root@127.0.0.1:1", ssh: {hostKeyFingerprints: ["${PIN}"]}}`,
  "",
].join("\n");

const cases: { inputs: Record<string, string>; input: string; says: RegExp }[] = [
  { inputs: { name: "Not_A_Label" }, input: "name", says: /is not a DNS label/ },
  { inputs: { "dry-run": "yes" }, input: "dry-run", says: /"yes" is not true or false/ },
  { inputs: { teardown: "sometimes" }, input: "teardown", says: /auto, always, never/ },
  { inputs: { "service-cidr": "not-a-cidr" }, input: "service-cidr", says: /not a CIDR/ },
  { inputs: { "pod-network-cidr": "10.244.0.0/33" }, input: "pod-network-cidr", says: /CIDR/ },
  { inputs: { "kubernetes-version": "1.99" }, input: "kubernetes-version", says: /supports/ },
  { inputs: { wait: "soon" }, input: "wait", says: /soon/ },
  { inputs: { cni: "flannel" }, input: "cni", says: /is not bridge, none/ },
  { inputs: { "skip-phases": "certs,nope" }, input: "skip-phases", says: /"nope" is neither/ },
  { inputs: { cluster: "missing.yaml" }, input: "cluster", says: /neither a file/ },
  { inputs: { cluster: "apiVersion: v1\nkind: Pod\n" }, input: "cluster", says: /no kubeforge/ },
  { inputs: { "kubeadm-config": "missing.yaml" }, input: "kubeadm-config", says: /neither a file/ },
  {
    inputs: { cluster: sshCluster, "ssh-host-key-fingerprints": "md5:00:11" },
    input: "ssh-host-key-fingerprints",
    says: /md5:00:11/,
  },
  {
    // kubeadm v1.35 locks ControlPlaneKubeletLocalMode to true (kubernetes/kubernetes#134106).
    inputs: { "kubernetes-version": "1.35", "feature-gates": "ControlPlaneKubeletLocalMode=false" },
    input: "feature-gates",
    says: /locked to true/,
  },
  {
    inputs: { "ip-family": "ipv6", "pod-network-cidr": "10.1.0.0/16" },
    input: "ip-family",
    says: /contradicts input pod-network-cidr/,
  },
  {
    inputs: { "ssh-private-key": "hunter2" },
    input: "ssh-private-key",
    says: /is not a private key/,
  },
];

describe("action main: bad inputs", () => {
  it.each(cases)("input $input", async ({ inputs, input, says }) => {
    // Each case otherwise builds a valid SSH cluster: only the bad input stops it.
    const step = await runStep(mainJs, {
      inputs: { cluster: sshCluster, "ssh-private-key": KEY, "dry-run": "true", ...inputs },
      timeoutMs: 60_000,
    });
    expect(step.code).toBe(1);
    const errors = step.stdout.split("\n").filter((l) => l.startsWith("::error::"));
    expect(errors, `${step.stdout}\n${step.stderr}`).toHaveLength(1);
    expect(errors[0]).toMatch(new RegExp(`^::error::input ${input}: `));
    expect(errors[0]).toMatch(says);
    expect(step.stdout).not.toContain("::group::");
    expect(step.state.get("outcome")).toBe("failure");
    expect(step.outputs.size).toBe(0);
    expect(step.env.size).toBe(0);
    // Nothing but kubeforge's own log (when the name was readable) on the runner.
    const temp = await readdir(step.runnerTemp, { recursive: true });
    expect(temp.filter((f) => !/^kubeforge-[a-z-]+(\/kubeforge\.log)?$/.test(f))).toEqual([]);
  });
});

describe("action main: the state folder", () => {
  it("writes its log over a link planted there, never through it", async () => {
    const runnerTemp = await fileDir("kubeforge-action-planted-");
    const victim = join(runnerTemp, "victim");
    await writeFile(victim, "someone else's file\n");
    await mkdir(join(runnerTemp, "kubeforge-planted"));
    await symlink(victim, join(runnerTemp, "kubeforge-planted", "kubeforge.log"));
    // A Cluster input naming no file: the step fails after its log is set up.
    const step = await runStep(mainJs, {
      inputs: { name: "planted", cluster: "missing.yaml" },
      runnerTemp,
      timeoutMs: 60_000,
    });
    expect(step.code).toBe(1);
    expect(await readFile(victim, "utf8")).toBe("someone else's file\n");
    const log = join(runnerTemp, "kubeforge-planted", "kubeforge.log");
    expect((await lstat(log)).isFile()).toBe(true);
    expect(await readFile(log, "utf8")).toContain("input cluster");
  });
});
