import { generateKeyPairSync } from "node:crypto";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { clusterFromInputs, readInputs, stateDirOf } from "../../../src/action/inputs.js";
import { maskKubeconfig, maskSecret } from "../../../src/action/mask.js";
import { savePlan } from "../../../src/action/plan.js";
import { GitHubReporter } from "../../../src/action/reporter.js";
import { customKubeletOf } from "../../../src/cluster/up/prepare.js";
import { defaultClusterSpec } from "../../../src/config/cluster/load.js";
import { sshTargetOf } from "../../../src/config/cluster/ssh.js";
import { testDir } from "../../support/temp-dir.js";

// The action's modules on their own: inputs → Cluster overrides (each naming its input), the
// default cluster, masking (whole values and lines), the plan read back, the log file.

const inputsOf = (values: Record<string, string>) => (name: string) => values[name] ?? "";

describe("readInputs", () => {
  it("takes the defaults when nothing is given", () => {
    const i = readInputs(inputsOf({}), {});
    expect(i).toEqual({
      dryRun: false,
      installOnly: false,
      teardown: "auto",
      verbosity: "normal",
      overrides: { from: {} },
    });
  });

  it("maps every input onto the Cluster overrides, naming the input each came from", () => {
    const i = readInputs(
      inputsOf({
        name: "e2e",
        "dry-run": "TRUE",
        teardown: "never",
        "kubernetes-version": "1.35",
        "pod-network-cidr": "10.1.0.0/16",
        "service-cidr": "10.2.0.0/16",
        wait: "90s",
        cni: "manifests/cni.yaml",
        "kubelet-binary": "https://example.com/kubelet#sha256=00",
        "skip-phases": "addon/kube-proxy,\n preflight",
        "ssh-host-key-fingerprints": "SHA256:a SHA256:b",
        "ssh-private-key": "KEY\n",
        "ssh-private-key-passphrase": " pass phrase ",
        "ssh-password": "pw",
        "ssh-sudo-password": "sudo-pw",
        cluster: "cluster.yaml",
        "job-status": "failure",
        verbosity: "debug",
        nodes: "1 control-plane, 2 workers",
        "load-images": "app:dev,\n out/app.tar",
        storage: "none",
        registry: "TRUE",
      }),
      { GITHUB_WORKSPACE: "/ws" },
    );
    expect(i).toEqual({
      name: "e2e",
      dryRun: true,
      installOnly: false,
      teardown: "never",
      verbosity: "debug",
      jobStatus: "failure",
      cluster: "cluster.yaml",
      sshPrivateKey: "KEY\n",
      sshPassphrase: " pass phrase ",
      sshPassword: "pw",
      sshSudoPassword: "sudo-pw",
      loadImages: [
        { kind: "image", ref: "app:dev" },
        { kind: "archive", path: "/ws/out/app.tar" },
      ],
      overrides: {
        name: "e2e",
        kubernetesVersion: "1.35",
        podSubnet: "10.1.0.0/16",
        serviceSubnet: "10.2.0.0/16",
        wait: "90s",
        cni: "/ws/manifests/cni.yaml",
        storage: "none",
        registry: "true",
        nodes: [
          { name: "cp-1", role: "control-plane", host: "docker" },
          { name: "w-1", role: "worker", host: "docker" },
          { name: "w-2", role: "worker", host: "docker" },
        ],
        kubeletBinary: "https://example.com/kubelet#sha256=00",
        skipPhases: ["addon/kube-proxy", "preflight"],
        hostKeyFingerprints: ["SHA256:a", "SHA256:b"],
        from: {
          name: "input name",
          kubernetesVersion: "input kubernetes-version",
          podSubnet: "input pod-network-cidr",
          serviceSubnet: "input service-cidr",
          wait: "input wait",
          cni: "input cni",
          storage: "input storage",
          registry: "input registry",
          nodes: "input nodes",
          kubeletBinary: "input kubelet-binary",
          skipPhases: "input skip-phases",
          hostKeyFingerprints: "input ssh-host-key-fingerprints",
        },
      },
    });
    expect(stateDirOf(i.name!, { RUNNER_TEMP: "/rt" })).toBe("/rt/kubeforge-e2e");
  });

  it("takes verbosity normal or debug only", () => {
    expect(() => readInputs(inputsOf({ verbosity: "verbose" }), {})).toThrow(
      'input verbosity: "verbose" is not one of normal, debug',
    );
  });

  it("takes job-status only as GitHub's job.status spells it", () => {
    for (const s of ["success", "failure", "cancelled"]) {
      expect(readInputs(inputsOf({ "job-status": s }), {}).jobStatus).toBe(s);
    }
    expect(() => readInputs(inputsOf({ "job-status": "failed" }), {})).toThrow(
      'input job-status: "failed" is not one of success, failure, cancelled (leave it unset: GitHub fills it in)',
    );
  });
});

describe("clusterFromInputs", () => {
  it("without a cluster input is the default cluster: one node on the runner", async () => {
    const { spec } = await clusterFromInputs(readInputs(inputsOf({}), {}), { HOME: "/home/x" });
    expect(spec).toEqual(defaultClusterSpec());
  });

  it("applies the inputs over a Cluster file and adds kubeadm-config's documents", async () => {
    const ws = await testDir("kubeforge-inputs-");
    await writeFile(
      join(ws, "cluster.yaml"),
      "apiVersion: kubeforge.dev/v1alpha1\nkind: Cluster\nname: from-file\nkubernetesVersion: v1.34.1\nwait: 2m\n",
    );
    await writeFile(
      join(ws, "kubeadm.yaml"),
      "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\napiServer:\n  extraArgs:\n  - {name: v, value: '4'}\n",
    );
    const env = { GITHUB_WORKSPACE: ws, HOME: ws };
    const inputs = readInputs(
      inputsOf({ cluster: "cluster.yaml", "kubeadm-config": "kubeadm.yaml", wait: "7m" }),
      env,
    );
    const { spec, source } = await clusterFromInputs(inputs, env);
    expect(source).toBe("cluster.yaml");
    expect(spec.name).toBe("from-file"); // no name input: the file's
    expect(spec.kubernetesVersion).toBe("v1.34.1"); // no version input: the file's
    expect(spec.wait).toBe("7m"); // the input wins
    expect(spec.kubeadm.documents).toContain("kind: ClusterConfiguration");
  });

  it("sets the Cluster's ssh credentials from the secret inputs; a node's own still wins", async () => {
    const KEY = generateKeyPairSync("ed25519")
      .privateKey.export({ type: "pkcs8", format: "pem" })
      .toString();
    const cluster = [
      "apiVersion: kubeforge.dev/v1alpha1",
      "kind: Cluster",
      "ssh: {user: ci, acceptNewHostKeys: true, passphrase: from-file}",
      "nodes:",
      "- {name: cp-1, role: control-plane, host: ssh://10.0.0.1}",
      "- {name: w-1, role: worker, host: ssh://10.0.0.2, ssh: {sudoPassword: own}}",
      "",
    ].join("\n");
    const inputs = readInputs(
      inputsOf({
        cluster,
        "ssh-private-key": KEY,
        "ssh-private-key-passphrase": "pp",
        "ssh-password": "pw",
        "ssh-sudo-password": "sudo",
      }),
      {},
    );
    const { spec } = await clusterFromInputs(inputs, { HOME: "/home/x" });
    expect(spec.ssh).toMatchObject({
      privateKey: KEY,
      passphrase: "pp",
      password: "pw",
      sudoPassword: "sudo",
    });
    expect(sshTargetOf(spec, spec.nodes[0]!)).toMatchObject({
      auth: { privateKey: KEY, passphrase: "pp", password: "pw" },
      sudoPassword: "sudo",
    });
    expect(sshTargetOf(spec, spec.nodes[1]!)).toMatchObject({ sudoPassword: "own" });
  });

  it("registry: true (any case), false, a port; anything else is one sentence naming the input", async () => {
    const registryOf = async (registry: string) =>
      (await clusterFromInputs(readInputs(inputsOf({ registry }), {}), { HOME: "/home/x" })).spec
        .registry;
    expect(await registryOf("True")).toEqual({ port: 5001 });
    expect(await registryOf("5002")).toEqual({ port: 5002 });
    expect(await registryOf("false")).toBeUndefined();
    expect(await registryOf("")).toBeUndefined();
    const error = (await registryOf("maybe").catch((e: unknown) => e)) as Error;
    expect(error.message).toBe(
      'input registry: "maybe" is not true, false or a port number from 1 to 65535 (registry)',
    );
  });

  it("names the input in every problem, and does not quote the key", async () => {
    const key =
      "-----BEGIN OPENSSH PRIVATE KEY-----\nnot really\n-----END OPENSSH PRIVATE KEY-----\n";
    const inputs = readInputs(
      inputsOf({ "service-cidr": "10.96.0.0/99", "ssh-private-key": key }),
      {},
    );
    const error = await clusterFromInputs(inputs, {}).catch((e: Error) => e);
    expect((error as Error).message.split("\n").sort()).toEqual([
      expect.stringMatching(/^input service-cidr: "10\.96\.0\.0\/99" is not a CIDR/),
    ]);
    const good = generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" });
    const ok = readInputs(inputsOf({ "ssh-private-key": good.toString() }), {});
    // A key for the runner-only cluster is accepted and unused.
    await expect(clusterFromInputs(ok, {})).resolves.toBeDefined();
    expect((error as Error).message).not.toContain("not really");
  });
});

describe("shortcuts: feature-gates, ip-family, kubectl-version", () => {
  it("reads them into the overrides and the kubectl version, naming the inputs", () => {
    const i = readInputs(
      inputsOf({
        "feature-gates": "InPlacePodVerticalScaling=true,\nRootlessControlPlane=false",
        "ip-family": "dual",
        "kubectl-version": "1.34",
      }),
      {},
    );
    expect(i.overrides).toMatchObject({
      featureGates: { InPlacePodVerticalScaling: true, RootlessControlPlane: false },
      ipFamily: "dual",
      from: { featureGates: "input feature-gates", ipFamily: "input ip-family" },
    });
    // The Cluster's form of a minor: its newest patch, resolved where kubectl is installed.
    expect(i.kubectlVersion).toBe("stable-1.34");
    expect(readInputs(inputsOf({ "kubectl-version": "v1.35.2" }), {}).kubectlVersion).toBe(
      "v1.35.2",
    );
  });

  it.each([
    [{ "feature-gates": "A=on" }, 'input feature-gates: A="on": the value must be true or false'],
    [{ "feature-gates": "a.b=true" }, 'input feature-gates: "a.b" is not a feature gate name'],
    [{ "ip-family": "IPv6" }, 'input ip-family: "IPv6" is not one of ipv4, ipv6, dual'],
    [{ "kubectl-version": "1.99" }, "input kubectl-version: "],
  ])("refuses %j", (bad, says) => {
    expect(() => readInputs(inputsOf(bad), {})).toThrow(says);
  });

  it("an ip-family the pod-network-cidr contradicts names both inputs", async () => {
    const inputs = readInputs(
      inputsOf({ "ip-family": "ipv6", "pod-network-cidr": "10.1.0.0/16" }),
      {},
    );
    const error = await clusterFromInputs(inputs, {}).catch((e: Error) => e);
    expect((error as Error).message).toBe(
      'input ip-family: "ipv6" contradicts input pod-network-cidr ("10.1.0.0/16"): ipv6 needs one IPv6 range',
    );
  });

  it("the gates reach the kubeadm documents; a gate kubeadm v1.35 removed is named by the input", async () => {
    const { spec } = await clusterFromInputs(
      readInputs(inputsOf({ "feature-gates": "InPlacePodVerticalScaling=true" }), {}),
      {},
    );
    expect(spec.kubeadm.config?.kubelet?.featureGates).toEqual({ InPlacePodVerticalScaling: true });
    const error = await clusterFromInputs(
      readInputs(
        inputsOf({
          "kubernetes-version": "1.35",
          "feature-gates": "WaitForAllControlPlaneComponents=true",
        }),
        {},
      ),
      {},
    ).catch((e: Error) => e);
    expect((error as Error).message).toMatch(
      /^input feature-gates: ClusterConfiguration\.featureGates: WaitForAllControlPlaneComponents graduated/,
    );
  });
});

describe("kubelet-binary", () => {
  const PIN = `SHA256:${"A".repeat(43)}`;
  /** cp-1 takes the released kubelet, w-1 its own build (a path next to the Cluster file). */
  const CLUSTER = [
    "apiVersion: kubeforge.dev/v1alpha1",
    "kind: Cluster",
    "ssh: {privateKeyFile: /dev/null}",
    "nodes:",
    `- {name: cp-1, role: control-plane, host: "ssh://root@10.0.0.1", ssh: {hostKeyFingerprints: ["${PIN}"]}}`,
    `- {name: w-1, role: worker, host: "ssh://root@10.0.0.2", kubeletBinary: bin/kubelet, ssh: {hostKeyFingerprints: ["${PIN}"]}}`,
    "",
  ].join("\n");

  it("without the input: one node its own kubelet, the other the released one", async () => {
    const env = { GITHUB_WORKSPACE: "/ws", HOME: "/ws" };
    const { spec } = await clusterFromInputs(readInputs(inputsOf({ cluster: CLUSTER }), env), env);
    const [cp, w] = spec.nodes;
    expect(customKubeletOf(spec, cp!)).toBeUndefined();
    expect(customKubeletOf(spec, w!)).toBe("/ws/bin/kubelet");
  });

  it("the input wins over a node's own kubeletBinary, with a warning naming the node", async () => {
    const env = { GITHUB_WORKSPACE: "/ws", HOME: "/ws" };
    const warnings: string[] = [];
    const { spec } = await clusterFromInputs(
      readInputs(inputsOf({ cluster: CLUSTER, "kubelet-binary": "out/kubelet" }), env),
      env,
      { warn: (m) => warnings.push(m) },
    );
    expect(spec.nodes.map((n) => customKubeletOf(spec, n))).toEqual([
      "/ws/out/kubelet",
      "/ws/out/kubelet",
    ]);
    expect(warnings).toEqual([
      "input kubelet-binary replaces the kubeletBinary the Cluster file gives w-1: every node gets /ws/out/kubelet",
    ]);
  });
});

describe("masking", () => {
  it("registers a multi-line secret whole and line by line", () => {
    const got: string[] = [];
    maskSecret("-----BEGIN KEY-----\n  abc  \n\n-----END KEY-----\n", (s) => got.push(s));
    expect(got).toEqual([
      "-----BEGIN KEY-----\n  abc  \n\n-----END KEY-----\n",
      "-----BEGIN KEY-----",
      "abc",
      "-----END KEY-----",
    ]);
  });

  it("registers a bootstrap token's secret half too", () => {
    const got: string[] = [];
    maskSecret("abcdef.0123456789abcdef", (s) => got.push(s));
    expect(got).toEqual(["abcdef.0123456789abcdef", "0123456789abcdef"]);
  });

  it("registers a kubeconfig's credentials, not its structure", () => {
    const key = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIKEYLINE\n-----END EC PRIVATE KEY-----\n";
    const data = Buffer.from(key).toString("base64");
    const conf = `apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user:\n    client-key-data: ${data}\n    token: "t0ken"\n`;
    const got: string[] = [];
    maskKubeconfig(conf, (s) => got.push(s));
    expect(got).toContain(conf);
    expect(got).toContain(`client-key-data: ${data}`);
    expect(got).toContain(data);
    expect(got).toContain("MHcCAQEEIKEYLINE");
    expect(got).toContain("t0ken");
    expect(got).not.toContain("apiVersion: v1");
    expect(got).not.toContain("users:");
  });

  it("the reporter's log file holds every line with registered secrets replaced", async () => {
    const dir = await testDir("kubeforge-reporter-");
    const printed: string[] = [];
    const masks: string[] = [];
    const r = new GitHubReporter({
      setSecret: (s) => masks.push(s),
      core: {
        info: (m) => printed.push(m),
        warning: (m) => printed.push(`warning ${m}`),
        group: (t, fn) => {
          printed.push(`group ${t}`);
          return fn();
        },
      },
    });
    r.mask("s3cret-line-1\ns3cret-line-2");
    r.info("before the log file: s3cret-line-1");
    r.logTo(join(dir, "kubeforge.log"));
    await r.group("init", () => Promise.resolve(r.warn("shown s3cret-line-2")));
    expect(masks).toEqual(["s3cret-line-1\ns3cret-line-2", "s3cret-line-1", "s3cret-line-2"]);
    expect(await readFile(join(dir, "kubeforge.log"), "utf8")).toBe(
      "before the log file: ***\n=== init\nWARNING: shown ***\n",
    );
    expect(r.steps.map((s) => [s.title, s.failed])).toEqual([["init", false]]);
  });
});

describe("savePlan", () => {
  it("saves up's dry-run plan whole and per node, with the action each would get", async () => {
    const dir = await testDir("kubeforge-plan-");
    const files = { planFile: join(dir, "plan.yaml"), nodeDir: join(dir, "plan") };
    const nodes = await savePlan(
      {
        cluster: "c",
        kubernetesVersion: "v1.35.0",
        apiServerEndpoint: "[fd00::1]:6443",
        endpointSource: "first-control-plane",
        prepare: false,
        nodes: [
          {
            name: "cp",
            role: "control-plane",
            host: "ssh://root@[fd00::1]:22",
            address: "fd00::1",
            action: "reset+init",
            documents: { init: {}, cluster: { clusterName: "c" }, ignoredKinds: [] },
          },
          { name: "w", role: "worker", host: "local", address: "10.0.0.2", action: "none" },
          {
            name: "v",
            role: "worker",
            host: "ssh://v",
            address: "10.0.0.3",
            action: "join",
            documents: { join: { caCertPath: "/ca.crt" }, ignoredKinds: [] },
          },
        ],
      },
      files,
    );
    expect(nodes).toEqual([
      { name: "cp", role: "control-plane", address: "fd00::1", action: "init" },
      { name: "w", role: "worker", address: "10.0.0.2", action: "none" },
      { name: "v", role: "worker", address: "10.0.0.3", action: "join" },
    ]);
    expect((await readdir(files.nodeDir)).sort()).toEqual(["cp.yaml", "v.yaml"]);
    expect(await readFile(join(files.nodeDir, "cp.yaml"), "utf8")).toBe(
      "# cp (control-plane, ssh://root@[fd00::1]:22, fd00::1): reset+init\napiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nclusterName: c\n",
    );
    expect(await readFile(join(files.nodeDir, "v.yaml"), "utf8")).toBe(
      "# v (worker, ssh://v, 10.0.0.3): join\napiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\ncaCertPath: /ca.crt\n",
    );
    const plan = await readFile(files.planFile, "utf8");
    expect(plan).toContain("# w (worker, local, 10.0.0.2): finished earlier, nothing to do\n");
    expect(plan.startsWith('# kubeforge up --dry-run: cluster "c"; nothing was changed\n')).toBe(
      true,
    );
  });
});
