import { execFile } from "node:child_process";
import { readdir, readFile, stat, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stopLocalRegistry } from "../../../src/cluster/local-registry.js";
import { opensslCAPin } from "../../support/ca-pin.js";
import { mermaidBlocks, readGantt } from "../../support/mermaid-gantt.js";
import { freePort } from "../../support/ports.js";
import { testDir } from "../../support/temp-dir.js";
import { createTestbed, type SshTestbed, type SshTestHost } from "../../support/testbed.js";
import { clusterFile } from "../up/support.js";
import { bundledMain, runStep, stepReport, type StepResult, unmaskedLines } from "./support.js";

// The action's main step (the bundled main.js, run as the runner runs it) building a cluster on
// two testbed hosts over real SSH against the simulated control plane: first a dry run (nothing
// changes on the hosts, outputs from the plan and the init rendered on the runner), then the real `up` (outputs, KUBECONFIG, summary, kubectl
// through the exported admin.conf), and no secret in anything written or printed unmasked.

let bed: SshTestbed;
const W1_KUBELET = "v1.35.1-custom.0+0123456789ab";
let mainJs: string;
let privateKey: string;

/** A Cluster file with the key and the host-key pins left out: they come from the inputs. */
function clusterWithoutCredentials(name: string, cps: SshTestHost[], workers: SshTestHost[]) {
  return clusterFile({ name, controlPlanes: cps, workers })
    .replace(/^ {2}privateKeyFile: .*\n/m, "")
    .replace(/, ssh: \{hostKeyFingerprints: \["[^"]*"\]\}/g, "");
}

async function hostHasClusterFiles(h: SshTestHost): Promise<string[]> {
  return readdir(h.path("etc/kubernetes")).catch(() => []);
}

function secretsOf(step: StepResult, adminConf: string): string[] {
  const keyLines = privateKey.split("\n").filter((l) => l.length > 20 && !l.startsWith("-----"));
  const clientKey = /client-key-data: (\S+)/.exec(adminConf)![1]!;
  const clientKeyLines = Buffer.from(clientKey, "base64")
    .toString()
    .split("\n")
    .filter((l) => l.length > 20 && !l.startsWith("-----"));
  const token = step.outputs.get("token")!;
  return [
    token,
    token.split(".")[1]!,
    step.outputs.get("join-command")!,
    clientKey,
    ...clientKeyLines,
    ...keyLines,
  ];
}

beforeAll(async () => {
  [bed, mainJs] = await Promise.all([
    createTestbed(["cp-1", "w-1", "x-1"], {
      ssh: true,
      // An IPv4 and an IPv6 address each: the dry run's cluster is dual-stack.
      ipv6: true,
      // w-1 runs a kubelet of its own build: the summary shows what it reports.
      kubeletVersions: { "w-1": W1_KUBELET },
    }),
    bundledMain(),
  ]);
  privateKey = await readFile(bed.hosts[0]!.ssh.privateKeyFile, "utf8");
}, 180_000);

let registryState: string | undefined;

afterAll(async () => {
  // This file runs no post step: the registry the real run started goes here.
  if (registryState) await stopLocalRegistry(registryState);
  await bed?.stop();
}, 120_000);

describe("action main step over SSH", () => {
  let runnerTemp: string;
  const fingerprints = () => bed.hosts.map((h) => h.ssh.hostKeyFingerprint).join("\n");

  it("dry run: changes nothing and sets its outputs from the plan and the rendered init", async () => {
    // Two control planes (and an endpoint no one needs to reach): a certificate key is made.
    const cluster = clusterWithoutCredentials(
      "plan",
      [bed.host("cp-1"), bed.host("w-1")],
      [],
    ).replace("wait: 3m", 'wait: 3m\ncontrolPlaneEndpoint: "10.0.0.250:6443"');
    const step = await runStep(mainJs, {
      inputs: {
        cluster, // inline YAML
        "ssh-private-key": privateKey,
        "ssh-host-key-fingerprints": fingerprints(),
        "dry-run": "true",
        "kubernetes-version": "1.35",
        name: "plan",
        // The shortcuts, expanded into every node's kubeadm documents and cp-1's rendered init.
        "feature-gates": "InPlacePodVerticalScaling=true, NodeLocalCRISocket=true",
        "ip-family": "dual",
      },
    });
    if (step.code !== 0) throw new Error(stepReport(step));
    expect(step.outputs.get("kubernetes-version")).toMatch(/^v1\.35\.\d+$/);
    expect(step.outputs.get("api-server")).toBe("https://10.0.0.250:6443");
    const nodes = JSON.parse(step.outputs.get("nodes")!) as { name: string; action: string }[];
    expect(nodes.map((n) => [n.name, n.action])).toEqual([
      ["cp-1", "init"],
      ["w-1", "join"],
    ]);
    // No cluster to talk to: KUBECONFIG is not exported.
    expect(step.env.has("KUBECONFIG")).toBe(false);
    const stateDir = join(step.runnerTemp, "kubeforge-plan");
    expect(step.outputs.get("plan")).toBe(join(stateDir, "plan.yaml"));
    expect(step.outputs.get("plan-dir")).toBe(join(stateDir, "plan"));
    const plan = await readFile(step.outputs.get("plan")!, "utf8");
    expect(plan).toContain("# cp-1 (control-plane");
    const cp1 = await readFile(join(stateDir, "plan", "cp-1.yaml"), "utf8");
    const w1 = await readFile(join(stateDir, "plan", "w-1.yaml"), "utf8");
    expect(cp1).toContain("kind: InitConfiguration");
    expect(cp1).not.toContain("kind: JoinConfiguration");
    expect(w1).toContain("kind: JoinConfiguration");
    expect(w1).toContain("controlPlane:"); // w-1 joins as a control plane here
    expect(w1).not.toContain("kind: InitConfiguration");

    // cp-1's init, rendered on the runner as `kubeforge init --dry-run` renders it: the outputs
    // a real run sets come from these files.
    const rendered = join(stateDir, "plan", "cp-1");
    const kubeconfig = join(rendered, "etc/kubernetes/admin.conf");
    expect(step.outputs.get("kubeconfig")).toBe(kubeconfig);
    expect((await stat(kubeconfig)).mode & 0o777).toBe(0o600);
    const adminConf = await readFile(kubeconfig, "utf8");
    expect(step.outputs.get("admin-conf")).toBe(adminConf);
    expect(adminConf).toContain("server: https://10.0.0.250:6443");
    for (const f of ["pki/ca.crt", "pki/apiserver.crt", "manifests/kube-apiserver.yaml"]) {
      expect(await readFile(join(rendered, "etc/kubernetes", f), "utf8"), f).not.toBe("");
    }
    // feature-gates: kubeadm's own gate in the ClusterConfiguration, the component gate as each
    // control-plane component's --feature-gates (kubeadm writes extraArgs as --name=value) and
    // in the kubelet's configuration; ip-family dual: both families' ranges (kind's IPv6 ones).
    expect(cp1).toMatch(/featureGates:\n\s+NodeLocalCRISocket: true/);
    const manifest = (name: string) =>
      readFile(join(rendered, "etc/kubernetes/manifests", `${name}.yaml`), "utf8");
    for (const c of ["kube-apiserver", "kube-controller-manager", "kube-scheduler"]) {
      expect(await manifest(c), c).toContain("- --feature-gates=InPlacePodVerticalScaling=true\n");
    }
    expect(await manifest("kube-apiserver")).toContain(
      "- --service-cluster-ip-range=10.96.0.0/12,fd00:10:96::/112\n",
    );
    expect(await manifest("kube-controller-manager")).toContain(
      "- --cluster-cidr=10.244.0.0/16,fd00:10:244::/56\n",
    );
    // Dual-stack: each node's kubelet gets its node-ip pair, IPv4 (the first service range's
    // family) first, as kubeadm's "Dual-stack support with kubeadm" writes it.
    for (const [h, text] of [
      [bed.host("cp-1"), cp1],
      [bed.host("w-1"), w1],
    ] as const) {
      expect(text, h.name).toMatch(
        new RegExp(`- name: node-ip\\n\\s+value: ${h.address},${h.address6!}\\n`),
      );
    }
    expect(await readFile(join(rendered, "var/lib/kubelet/config.yaml"), "utf8")).toMatch(
      /featureGates:\n\s+InPlacePodVerticalScaling: true/,
    );
    const token = step.outputs.get("token")!;
    expect(token).toMatch(/^[a-z0-9]{6}\.[a-z0-9]{16}$/);
    // The hash of the rendered CA's public key, computed by openssl.
    const hash = `sha256:${opensslCAPin(join(rendered, "etc/kubernetes/pki/ca.crt"))}`;
    expect(step.outputs.get("ca-cert-hash")).toBe(hash);
    expect(step.outputs.get("join-command")).toBe(
      `kubeforge join 10.0.0.250:6443 --token ${token} --discovery-token-ca-cert-hash ${hash}`,
    );
    const certificateKey = step.outputs.get("certificate-key")!;
    expect(certificateKey).toMatch(/^[0-9a-f]{64}$/);

    // Every secret output was registered before anything printed it, and no file of the step
    // (the rendered folder aside) holds one.
    const clientKey = /client-key-data: (\S+)/.exec(adminConf)![1]!;
    for (const s of [token, step.outputs.get("join-command")!, certificateKey, clientKey]) {
      expect(step.masks).toContain(s);
    }
    const log = await readFile(join(stateDir, "kubeforge.log"), "utf8");
    for (const s of [certificateKey, token, token.split(".")[1]!, clientKey]) {
      for (const text of [plan, cp1, w1, log, step.summary, step.stateFile, step.stderr]) {
        expect(text).not.toContain(s);
      }
      expect(unmaskedLines(step.stdout, s)).toEqual([]);
    }
    expect(log).toMatch(/^=== render init cp-1$/m);
    expect(log).toMatch(/^cp-1: \[dryrun\] Would run on cp-1: /m);
    expect(step.summary).toContain("dry run, nothing was changed");
    expect(step.summary).toMatch(/cp-1.*control-plane.*would init/s);

    // Nothing was written on the hosts.
    for (const h of bed.hosts) expect(await hostHasClusterFiles(h), h.name).toEqual([]);
  }, 180_000);

  let step: StepResult;
  let adminConf: string;

  it("builds the cluster: outputs, KUBECONFIG, state", async () => {
    const cluster = clusterWithoutCredentials("ci", [bed.host("cp-1")], [bed.host("w-1")]);
    const dir = await testDir("kubeforge-action-cluster-");
    await writeFile(join(dir, "cluster.yaml"), cluster);
    const registryPort = await freePort();
    step = await runStep(mainJs, {
      inputs: {
        cluster: join(dir, "cluster.yaml"), // a path
        "ssh-private-key": privateKey,
        "ssh-host-key-fingerprints": fingerprints(),
        "pod-network-cidr": "10.200.0.0/16",
        registry: String(registryPort),
      },
    });
    runnerTemp = step.runnerTemp;
    // No name input: the cluster is the file's "ci", and so is the folder.
    const stateDir = join(runnerTemp, "kubeforge-ci");
    registryState = join(stateDir, "registry.json");
    if (step.code !== 0) throw new Error(stepReport(step));
    const kubeconfig = join(stateDir, "admin.conf");
    expect(step.outputs.get("kubeconfig")).toBe(kubeconfig);
    expect(step.env.get("KUBECONFIG")).toBe(kubeconfig);
    expect((await stat(kubeconfig)).mode & 0o777).toBe(0o600);
    adminConf = await readFile(kubeconfig, "utf8");
    expect(step.outputs.get("admin-conf")).toBe(adminConf);
    expect(step.outputs.get("kubernetes-version")).toBe("v1.35.0");
    expect(step.outputs.get("api-server")).toMatch(/^https:\/\/.+:6443$/);
    expect(adminConf).toContain(`server: ${step.outputs.get("api-server")}`);
    expect(JSON.parse(step.outputs.get("nodes")!)).toEqual([
      { name: "cp-1", role: "control-plane", address: bed.host("cp-1").address, action: "init" },
      { name: "w-1", role: "worker", address: bed.host("w-1").address, action: "join" },
    ]);
    const token = step.outputs.get("token")!;
    expect(token).toMatch(/^[a-z0-9]{6}\.[a-z0-9]{16}$/);
    const hash = step.outputs.get("ca-cert-hash")!;
    expect(hash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(step.outputs.get("join-command")).toContain(`--token ${token}`);
    expect(step.outputs.get("join-command")).toContain(`--discovery-token-ca-cert-hash ${hash}`);
    expect(step.outputs.get("certificate-key")).toBe(""); // one control plane: none uploaded
    expect(step.state.get("state-dir")).toBe(stateDir);
    expect(step.state.get("outcome")).toBe("success");
    expect(step.state.get("phase")).toBe("wait");

    // The local registry: Debian's docker-registry on the runner, every address (SSH nodes),
    // each node's containerd pointed at it by the address its SSH connection comes from.
    expect(step.outputs.get("registry")).toBe(`localhost:${registryPort}`);
    const server = `http://${bed.gateway}:${registryPort}`;
    expect(step.outputs.get("registry-for-nodes")).toBe(server);
    expect((await fetch(`http://${bed.gateway}:${registryPort}/v2/`)).status).toBe(200);
    for (const h of [bed.host("cp-1"), bed.host("w-1")] as SshTestHost[]) {
      const hosts = await h.sshOutput(
        `cat /etc/containerd/certs.d/localhost:${registryPort}/hosts.toml`,
      );
      expect(hosts).toContain(`server = "${server}"`);
    }
    // Published for tools as KEP-1755 says, through the API.
    const published = await new Promise<string>((resolve, reject) =>
      execFile(
        "kubectl",
        ["get", "configmap", "-n", "kube-public", "local-registry-hosting", "-o", "json"],
        {
          env: { PATH: process.env.PATH, HOME: runnerTemp, KUBECONFIG: kubeconfig },
          timeout: 60_000,
        },
        (error, stdout, stderr) => (error ? reject(new Error(stderr)) : resolve(stdout)),
      ),
    );
    const data = (JSON.parse(published) as { data: Record<string, string> }).data;
    expect(data["localRegistryHosting.v1"]).toContain(`host: "localhost:${registryPort}"`);
  }, 420_000);

  it("hands later steps a working cluster through KUBECONFIG", async () => {
    const out = await new Promise<string>((resolve, reject) =>
      execFile(
        "kubectl",
        ["get", "nodes", "-o", "json", "--request-timeout", "20s"],
        {
          // A later step's environment: KUBECONFIG from GITHUB_ENV (HOME for kubectl's cache).
          env: {
            PATH: process.env.PATH,
            HOME: runnerTemp,
            KUBECONFIG: step.env.get("KUBECONFIG")!,
          },
          timeout: 60_000,
        },
        (error, stdout, stderr) => (error ? reject(new Error(stderr)) : resolve(stdout)),
      ),
    );
    const nodes = JSON.parse(out) as {
      items: {
        metadata: { name: string };
        spec: { podCIDR?: string };
        status: { conditions: { type: string; status: string }[] };
      }[];
    };
    expect(
      nodes.items.map((n) => [
        n.metadata.name,
        n.status.conditions.find((c) => c.type === "Ready")?.status,
        n.spec.podCIDR?.startsWith("10.200."),
      ]),
    ).toEqual([
      ["cp-1", "True", true],
      ["w-1", "True", true],
    ]);
  }, 120_000);

  it("logs one group per step and host-prefixed lines, and summarises the cluster", () => {
    const groups = [...step.stdout.matchAll(/^::group::(.*)$/gm)].map((m) => m[1]);
    expect(groups).toEqual([
      "connect",
      "facts",
      "registry",
      "preflight",
      "init cp-1",
      "join workers",
      "nodes",
      "storage",
      "registry",
      "wait",
    ]);
    expect(step.stdout.match(/^::group::/gm)!.length).toBe(
      step.stdout.match(/^::endgroup::/gm)!.length,
    );
    expect(step.stdout).toMatch(/^w-1: \[preflight\] /m);
    expect(step.summary).toContain("kubeforge: cluster ci (ready)");
    expect(step.summary).toMatch(
      new RegExp(
        `<td>cp-1</td><td>control-plane</td><td>${bed.host("cp-1").address}</td><td>v1.35.0</td><td>init</td>`,
      ),
    );
    expect(step.summary).toContain(
      `<td>w-1</td><td>worker</td><td>${bed.host("w-1").address}</td><td>${W1_KUBELET}</td><td>join</td>`,
    );
    expect(step.summary).toMatch(/<td>join workers<\/td><td>\d+\.\d s<\/td>/);
    expect(step.summary).toMatch(/<td>cp-1<\/td><td>certs<\/td><td>\d+\.\d s<\/td>/);
    expect(step.summary).toContain("<tr><th>Nodes</th><td>1 control plane, 1 worker</td></tr>");
    expect(step.summary).toMatch(
      /<tr><th>Ready after<\/th><td>(\d+\.\d s|\d+ min \d\d s)<\/td><\/tr>/,
    );
    // The phases over time: the step's groups in order, then each node's init or join phases.
    const blocks = mermaidBlocks(step.summary);
    expect(blocks).toHaveLength(1);
    const gantt = readGantt(blocks[0]!);
    expect(gantt.sections).toEqual(["cluster", "cp-1", "w-1"]);
    const cluster = gantt.tasks.filter((t) => t.section === "cluster");
    expect(cluster.map((t) => t.name)).toEqual(groups);
    for (const [a, b] of cluster.slice(1).map((t, i) => [cluster[i]!, t] as const)) {
      expect(b.start).toBeGreaterThanOrEqual(a.end - 1);
    }
    expect(gantt.tasks.filter((t) => t.section === "cp-1").map((t) => t.name)).toContain("certs");
    expect(gantt.tasks.filter((t) => t.section === "w-1").map((t) => t.name)).toContain(
      "kubelet-start",
    );
    // Nothing a reader cannot open after the job: no path on the runner.
    expect(step.summary).not.toContain(dirname(step.runnerTemp));
  });

  it("registers every secret before printing it and writes none to its own files", async () => {
    const secrets = secretsOf(step, adminConf);
    // Registered with the runner, so later steps that print them are masked too.
    expect(step.masks).toContain(step.outputs.get("token"));
    expect(step.masks).toContain(step.outputs.get("token")!.split(".")[1]);
    expect(step.masks).toContain(step.outputs.get("join-command"));
    expect(step.masks).toContain(/^\s*(client-key-data: \S+)/m.exec(adminConf)![1]);
    for (const line of privateKey.split("\n").filter((l) => l.trim() !== "")) {
      expect(step.masks).toContain(line.trim());
    }
    const log = await readFile(join(step.state.get("state-dir")!, "kubeforge.log"), "utf8");
    expect(log).toMatch(/^=== init cp-1$/m);
    expect(log).toMatch(/^cp-1: \[certs\] /m);
    for (const s of secrets) {
      expect(unmaskedLines(step.stdout, s), s.slice(0, 12)).toEqual([]);
      for (const [what, text] of [
        ["stderr", step.stderr],
        ["GITHUB_STATE", step.stateFile],
        ["GITHUB_ENV", [...step.env.values()].join("\n")],
        ["summary", step.summary],
        ["kubeforge.log", log],
      ] as const) {
        expect(text.includes(s), `${what} holds ${s.slice(0, 12)}...`).toBe(false);
      }
    }
  });

  it("a second cluster in the same job, without a name input, gets a folder of its own", async () => {
    const ciDir = join(runnerTemp, "kubeforge-ci");
    const before = {
      log: await readFile(join(ciDir, "kubeforge.log"), "utf8"),
      admin: await readFile(join(ciDir, "admin.conf"), "utf8"),
    };
    const other = await runStep(mainJs, {
      runnerTemp,
      inputs: {
        cluster: clusterWithoutCredentials("other", [bed.host("x-1")], []),
        "ssh-private-key": privateKey,
        "ssh-host-key-fingerprints": fingerprints(),
        "dry-run": "true",
      },
    });
    if (other.code !== 0) throw new Error(stepReport(other));
    expect(other.state.get("state-dir")).toBe(join(runnerTemp, "kubeforge-other"));
    expect(other.outputs.get("plan")).toBe(join(runnerTemp, "kubeforge-other", "plan.yaml"));
    expect(await readFile(join(runnerTemp, "kubeforge-other", "kubeforge.log"), "utf8")).toMatch(
      /cluster "other"/,
    );
    // The first cluster's files are untouched.
    expect(await readFile(join(ciDir, "kubeforge.log"), "utf8")).toBe(before.log);
    expect(await readFile(join(ciDir, "admin.conf"), "utf8")).toBe(before.admin);
    expect(await readFile(join(ciDir, "admin.conf"), "utf8")).toBe(adminConf);
  }, 180_000);

  it("the same cluster again uses its folder; another cluster of the same name is refused", async () => {
    const ciDir = join(runnerTemp, "kubeforge-ci");
    const again = await runStep(mainJs, {
      runnerTemp,
      inputs: {
        cluster: clusterWithoutCredentials("ci", [bed.host("cp-1")], [bed.host("w-1")]),
        "ssh-private-key": privateKey,
        "ssh-host-key-fingerprints": fingerprints(),
        // The networking the cluster was built with: another would be refused.
        "pod-network-cidr": "10.200.0.0/16",
        "dry-run": "true",
      },
    });
    if (again.code !== 0) throw new Error(stepReport(again));
    expect(again.state.get("state-dir")).toBe(ciDir);
    // The hosts carry cluster "ci" already: the plan has nothing to do on them.
    const nodes = JSON.parse(again.outputs.get("nodes")!) as { action: string }[];
    expect(nodes.map((n) => n.action)).toEqual(["none", "none"]);
    // The cluster exists: no init to render, no outputs from one.
    expect(again.outputs.has("kubeconfig")).toBe(false);
    expect(again.outputs.has("token")).toBe(false);

    const log = await readFile(join(ciDir, "kubeforge.log"), "utf8");
    const clash = await runStep(mainJs, {
      runnerTemp,
      timeoutMs: 60_000,
      inputs: {
        // Named "ci" by the name input, but its first control plane is another host.
        cluster: clusterWithoutCredentials("elsewhere", [bed.host("x-1")], []),
        "ssh-private-key": privateKey,
        "ssh-host-key-fingerprints": fingerprints(),
        name: "ci",
      },
    });
    expect(clash.code).toBe(1);
    const errors = clash.stdout.split("\n").filter((l) => l.startsWith("::error::"));
    expect(errors).toEqual([
      expect.stringMatching(
        new RegExp(
          `^::error::the folder ${ciDir} holds another cluster named "ci" \\(first control plane ssh://root@${bed.host("cp-1").ssh.host}:\\d+; .*give this step a different \`name\` input$`,
        ),
      ),
    ]);
    expect(clash.stdout).not.toContain("::group::"); // no host was contacted
    expect(clash.state.has("state-dir")).toBe(false);
    expect(clash.outputs.size).toBe(0);
    // The folder's files are the first cluster's still.
    expect(await readFile(join(ciDir, "kubeforge.log"), "utf8")).toBe(log);
    expect(await readFile(join(ciDir, "admin.conf"), "utf8")).toBe(adminConf);
    expect(await hostHasClusterFiles(bed.host("x-1"))).toEqual([]);
  }, 180_000);

  it("a failure: the step fails naming the host, records it for post and exits by itself", async () => {
    const wrongPin = `SHA256:${"B".repeat(43)}`;
    const failed = await runStep(mainJs, {
      timeoutMs: 120_000,
      inputs: {
        cluster: clusterWithoutCredentials("ci", [bed.host("cp-1")], [bed.host("w-1")]),
        "ssh-private-key": privateKey,
        "ssh-host-key-fingerprints": `${bed.host("cp-1").ssh.hostKeyFingerprint} ${wrongPin}`,
        name: "broken",
      },
    });
    expect(failed.code).toBe(1); // not null: it exited without being killed
    const errors = failed.stdout.split("\n").filter((l) => l.startsWith("::error::"));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/w-1/);
    expect(errors[0]).not.toMatch(/cp-1:/);
    expect(failed.state.get("outcome")).toBe("failure");
    expect(failed.state.get("phase")).toBe("connect");
    const stateDir = join(failed.runnerTemp, "kubeforge-broken");
    expect(failed.state.get("state-dir")).toBe(stateDir);
    const log = await readFile(join(stateDir, "kubeforge.log"), "utf8");
    expect(log).toMatch(/^=== connect$/m);
    expect(log).toMatch(/^ERROR: failed on 1 of 2 hosts:\n - w-1: .*host key mismatch/m);
    expect(failed.summary).toContain("kubeforge: cluster broken (failed)");
    const gantt = readGantt(mermaidBlocks(failed.summary)[0]!);
    expect(gantt.tasks.map((t) => [t.name, t.tags])).toEqual([["connect", ["crit"]]]);
    expect(failed.summary).not.toContain(dirname(failed.runnerTemp));
    expect(failed.outputs.size).toBe(0);
    expect(failed.env.has("KUBECONFIG")).toBe(false);
  }, 180_000);
});
