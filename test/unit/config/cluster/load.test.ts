import { describe, expect, it } from "vitest";
import {
  defaultClusterSpec,
  holdsClusterDocument,
  loadClusterSpec,
  type LoadClusterOptions,
} from "../../../../src/config/cluster/load.js";
import { defaultPrepare } from "../../../../src/config/cluster/defaults.js";
import { runnerPathReferences } from "../../../../src/config/cluster/references.js";
import type { ClusterSpec } from "../../../../src/config/cluster/types.js";
import { ConfigError, decodeConfigDocuments } from "../../../../src/config/load.js";

const HEAD = "apiVersion: kubeforge.dev/v1alpha1\nkind: Cluster\n";
const FP = "SHA256:ohD8VZEXGWo6Ez8GSEJQ9WpafgLFsOfLOtGGQCQo6Og";
const FP2 = "SHA256:Nt2W3eDnSc5nMu8V2u3vE0FVTzRc1n+Ok8AZyhf3lKI";
const KEY =
  "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n";
const V4 = "apiVersion: kubeadm.k8s.io/v1beta4";
const BASE: LoadClusterOptions = { baseDir: "/work/cfg", home: "/home/runner" };

function load(text: string, opts: LoadClusterOptions = {}): ClusterSpec {
  return loadClusterSpec(text, "cluster.yaml", { ...BASE, ...opts });
}

function problemsOf(text: string, opts: LoadClusterOptions = {}): string[] {
  try {
    load(text, opts);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    return e.problems;
  }
  throw new Error("expected the Cluster file to be refused");
}

/** Two ssh nodes with everything they need, for cases about something else. */
const SSH_OK = `ssh:
  user: ubuntu
  privateKeyFile: ~/.ssh/id_ed25519
  hostKeyFingerprints: ["${FP}"]
`;

// ---- issue 5 ---------------------------------------------------------------------------------

// The example of issue 5, byte for byte: files written today must keep working.
const ISSUE_5_EXAMPLE = `apiVersion: kubeforge.dev/v1alpha1
kind: Cluster
kubernetesVersion: v1.35.0
ssh:
  user: ubuntu
  privateKeyFile: ~/.ssh/id_ed25519      # or privateKey (inline), password, agent: true
  hostKeyFingerprints: ["SHA256:..."]    # pins; or acceptNewHostKeys: true
  jumpHost: ssh://bastion.example.com
nodes:
- {name: cp-1, role: control-plane, host: "ssh://ubuntu@203.0.113.10:22"}
- {name: w-1, role: worker, host: "ssh://ubuntu@203.0.113.11"}
`;

describe("the example of issue 5", () => {
  it("reads every field; only the placeholder pin is refused", () => {
    expect(problemsOf(ISSUE_5_EXAMPLE)).toEqual([
      expect.stringMatching(
        /^cluster\.yaml: ssh\.hostKeyFingerprints\[0\]: "SHA256:\.\.\." is not a host key fingerprint/,
      ),
    ]);
  });

  it("loads with a real pin", () => {
    const spec = load(ISSUE_5_EXAMPLE.replace("SHA256:...", FP));
    const ssh = {
      user: "ubuntu",
      port: 22,
      privateKeyFile: "/home/runner/.ssh/id_ed25519",
      hostKeyFingerprints: [FP],
      jumpHost: "ssh://bastion.example.com",
    };
    expect(spec).toEqual({
      apiVersion: "kubeforge.dev/v1alpha1",
      kind: "Cluster",
      name: "kubeforge",
      kubernetesVersion: "v1.35.0",
      networking: {
        podSubnet: "10.244.0.0/16",
        serviceSubnet: "10.96.0.0/12",
        dnsDomain: "cluster.local",
      },
      cni: { type: "bridge" },
      storage: "local-path",
      kubeadm: {},
      ssh,
      nodes: [
        // A cluster with a worker keeps kubeadm's control-plane taint: taints stay unset.
        { name: "cp-1", role: "control-plane", host: "ssh://ubuntu@203.0.113.10:22", ssh },
        { name: "w-1", role: "worker", host: "ssh://ubuntu@203.0.113.11", ssh },
      ],
      wait: "5m",
      concurrency: 8,
      prepare: defaultPrepare(),
    });
  });
});

// ---- accepted files --------------------------------------------------------------------------

describe("accepted Cluster files", () => {
  it("an empty Cluster is the default: one untainted control plane on this machine", () => {
    expect(load(HEAD)).toEqual(defaultClusterSpec());
    expect(defaultClusterSpec().nodes).toEqual([
      { name: "kubeforge-control-plane", role: "control-plane", host: "local", taints: [] },
    ]);
  });

  it.each<[string, string, Partial<ClusterSpec> | ((s: ClusterSpec) => void)]>([
    ["a name", "name: ci-a", { name: "ci-a" }],
    ["a minor version", 'kubernetesVersion: "1.35"', { kubernetesVersion: "stable-1.35" }],
    ["a version without v", "kubernetesVersion: 1.34.2", { kubernetesVersion: "v1.34.2" }],
    ["a label", "kubernetesVersion: stable", { kubernetesVersion: "stable" }],
    [
      "an endpoint without a port gets 6443",
      "controlPlaneEndpoint: api.example.com",
      { controlPlaneEndpoint: "api.example.com:6443" },
    ],
    [
      "a bare IPv6 endpoint is bracketed",
      "controlPlaneEndpoint: fd00::10",
      { controlPlaneEndpoint: "[fd00::10]:6443" },
    ],
    [
      "an endpoint with a port",
      "controlPlaneEndpoint: 203.0.113.5:443",
      { controlPlaneEndpoint: "203.0.113.5:443" },
    ],
    [
      "dual-stack networking",
      "networking: {podSubnet: '10.244.0.0/16,fd00:10:244::/56', serviceSubnet: '10.96.0.0/12,fd00:10:96::/112', dnsDomain: k8s.test}",
      {
        networking: {
          podSubnet: "10.244.0.0/16,fd00:10:244::/56",
          serviceSubnet: "10.96.0.0/12,fd00:10:96::/112",
          dnsDomain: "k8s.test",
        },
      },
    ],
    [
      "no pod range with a CNI of one's own",
      "cni: none\nnetworking: {podSubnet: ''}",
      (s) => {
        expect(s.networking.podSubnet).toBe("");
        expect(s.cni).toEqual({ type: "none" });
      },
    ],
    ["cni none", "cni: none", { cni: { type: "none" } }],
    [
      "a cni manifest path, relative to the file",
      "cni: manifests/calico.yaml",
      { cni: { type: "manifest", manifest: "/work/cfg/manifests/calico.yaml" } },
    ],
    [
      "a cni manifest file name",
      "cni: flannel.yml",
      { cni: { type: "manifest", manifest: "/work/cfg/flannel.yml" } },
    ],
    [
      "a cni manifest URL",
      "cni: https://example.com/calico.yaml",
      { cni: { type: "manifest", manifest: "https://example.com/calico.yaml" } },
    ],
    [
      "the object form of cni",
      "cni: {type: manifest, manifest: /abs/cni.yaml}",
      { cni: { type: "manifest", manifest: "/abs/cni.yaml" } },
    ],
    ["the object form of bridge", "cni: {type: bridge}", { cni: { type: "bridge" } }],
    ["wait and concurrency", "wait: 90s\nconcurrency: 64", { wait: "90s", concurrency: 64 }],
    [
      "a kubelet binary and phases to skip",
      "kubeletBinary: ../bin/kubelet\nskipPhases: [addon/kube-proxy, preflight]",
      { kubeletBinary: "/work/bin/kubelet", skipPhases: ["addon/kube-proxy", "preflight"] },
    ],
    [
      "a patches folder",
      "kubeadm: {patchesDir: ./patches}",
      { kubeadm: { patchesDir: "/work/cfg/patches" } },
    ],
    [
      "labels read the Kubernetes way (a boolean is its text, a null value empty)",
      "nodes:\n- {name: cp-1, role: control-plane, host: local, labels: {gpu: true, example.com/tier: web, empty: }}",
      (s) =>
        expect(s.nodes[0]!.labels).toEqual({ gpu: "true", "example.com/tier": "web", empty: "" }),
    ],
    [
      "a node address in canonical form",
      "nodes:\n- {name: cp-1, role: control-plane, host: local, address: 'FD00:0::10'}",
      (s) => expect(s.nodes[0]!.address).toBe("fd00::10"),
    ],
    [
      "taints as written",
      "nodes:\n- {name: cp-1, role: control-plane, host: local, taints: [{key: example.com/gpu, value: 'yes', effect: NoExecute}, {key: a, effect: NoSchedule}]}\n- {name: w-1, role: worker, host: 'ssh://u@h', ssh: {agent: true, acceptNewHostKeys: true}}",
      (s) => {
        expect(s.nodes[0]!.taints).toEqual([
          { key: "example.com/gpu", value: "yes", effect: "NoExecute" },
          { key: "a", effect: "NoSchedule" },
        ]);
        expect(s.nodes[1]!.taints).toBeUndefined();
      },
    ],
    [
      "three control planes without workers all run workloads",
      "nodes:\n- {name: a, role: control-plane, host: local}\n- {name: b, role: control-plane, host: 'ssh://u@b', ssh: {agent: true, acceptNewHostKeys: true}}\n- {name: c, role: control-plane, host: 'ssh://u@c', taints: [{key: k, effect: NoSchedule}], ssh: {agent: true, acceptNewHostKeys: true}}",
      (s) =>
        expect(s.nodes.map((n) => n.taints)).toEqual([
          [],
          [],
          [{ key: "k", effect: "NoSchedule" }],
        ]),
    ],
  ])("%s", (_name, body, expected) => {
    const spec = load(`${HEAD}${body}\n`);
    if (typeof expected === "function") expected(spec);
    else expect(spec).toMatchObject(expected);
  });

  it("merges a node's ssh over the cluster's, with user and port from the host URL", () => {
    const spec = load(`${HEAD}ssh:
  user: ubuntu
  port: 2222
  privateKeyFile: keys/id
  hostKeyFingerprints: ["${FP}"]
nodes:
- {name: cp-1, role: control-plane, host: "ssh://admin@[fd00::1]:22"}
- name: w-1
  role: worker
  host: ssh://w1.example.com
  ssh: {privateKey: "${KEY.replace(/\n/g, "\\n")}", knownHosts: ["w1.example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"]}
`);
    expect(spec.ssh).toEqual({
      user: "ubuntu",
      port: 2222,
      privateKeyFile: "/work/cfg/keys/id",
      hostKeyFingerprints: [FP],
    });
    expect(spec.nodes[0]!.ssh).toEqual({ ...spec.ssh, user: "admin", port: 22 });
    expect(spec.nodes[1]!.ssh).toEqual({
      user: "ubuntu",
      port: 2222,
      privateKey: KEY,
      knownHosts: [
        "w1.example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
      ],
    });
  });

  it("leaves relative paths relative when the file's folder is not known", () => {
    const spec = loadClusterSpec(`${HEAD}cni: ./cni.yaml\n`, "inline", {});
    expect(spec.cni).toEqual({ type: "manifest", manifest: "./cni.yaml" });
  });

  it("takes networking, version and endpoint from a ClusterConfiguration when the Cluster leaves them out", () => {
    const spec = load(`${HEAD}---
${V4}
kind: InitConfiguration
localAPIEndpoint: {bindPort: 7443}
---
${V4}
kind: ClusterConfiguration
kubernetesVersion: v1.34.1
controlPlaneEndpoint: api.example.com
networking: {podSubnet: 192.168.0.0/16, serviceSubnet: 10.100.0.0/16}
`);
    expect(spec).toMatchObject({
      kubernetesVersion: "v1.34.1",
      controlPlaneEndpoint: "api.example.com:7443",
      networking: {
        podSubnet: "192.168.0.0/16",
        serviceSubnet: "10.100.0.0/16",
        dnsDomain: "cluster.local",
      },
    });
  });

  it("accepts the same values written in both places", () => {
    const spec = load(`${HEAD}kubernetesVersion: "1.35.0"
controlPlaneEndpoint: api.example.com
networking: {podSubnet: 10.244.0.0/16}
---
${V4}
kind: ClusterConfiguration
kubernetesVersion: v1.35.0
controlPlaneEndpoint: api.example.com:6443
networking: {podSubnet: 10.244.0.0/16}
`);
    expect(spec.kubernetesVersion).toBe("v1.35.0");
    expect(spec.controlPlaneEndpoint).toBe("api.example.com:6443");
  });
});

// ---- kubeadm documents -----------------------------------------------------------------------

describe("kubeadm documents", () => {
  const files: Record<string, string> = {
    "/work/cfg/kubeadm/join.yaml": `${V4}\nkind: JoinConfiguration\nnodeRegistration: {kubeletExtraArgs: [{name: v, value: "4"}]}\n`,
  };
  const readFile = (p: string) => {
    const text = files[p];
    if (text === undefined) throw new Error(`ENOENT: no such file or directory, open '${p}'`);
    return text;
  };

  it("gathers the file's own, inline and configFile documents into one text kubeadm's loader reads", () => {
    const spec = load(
      `${HEAD}kubeadm:
  configFile: kubeadm/join.yaml
  documents: |
    apiVersion: kubelet.config.k8s.io/v1beta1
    kind: KubeletConfiguration
    maxPods: 50
---
${V4}
kind: ClusterConfiguration
apiServer:
  certSANs: [api.example.com]
`,
      { readFile },
    );
    expect(spec.kubeadm.configFile).toBe("/work/cfg/kubeadm/join.yaml");
    const docs = decodeConfigDocuments(spec.kubeadm.documents!, "documents");
    expect(docs.cluster?.apiServer?.certSANs).toEqual(["api.example.com"]);
    expect(docs.kubelet?.maxPods).toBe(50);
    expect(docs.join?.nodeRegistration?.kubeletExtraArgs).toEqual([{ name: "v", value: "4" }]);
  });

  it("takes kubeadm.documents as a list of documents too", () => {
    const spec = load(`${HEAD}kubeadm:
  documents:
  - apiVersion: kubeproxy.config.k8s.io/v1alpha1
    kind: KubeProxyConfiguration
    mode: nftables
`);
    expect(decodeConfigDocuments(spec.kubeadm.documents!, "d").kubeProxy?.mode).toBe("nftables");
  });

  it("reports a kubeadm typo up front, naming where the document is and its kind", () => {
    expect(
      problemsOf(
        `${HEAD}kubeadm:
  configFile: kubeadm/join.yaml
  documents: |
    ${V4}
    kind: InitConfiguration
    skipPhase: [addon]
---
${V4}
kind: ClusterConfiguration
networking: {podSubent: 10.0.0.0/16}
`,
        { readFile: (p) => readFile(p).replace("nodeRegistration", "nodeRegistraton") },
      ),
    ).toEqual([
      'cluster.yaml: ClusterConfiguration: unknown field "networking.podSubent"',
      'cluster.yaml: kubeadm.documents: InitConfiguration: unknown field "skipPhase"',
      '/work/cfg/kubeadm/join.yaml: JoinConfiguration: unknown field "nodeRegistraton"',
    ]);
  });

  it("reports kubeadm's own validation, naming the document's place", () => {
    expect(
      problemsOf(`${HEAD}kubeadm:
  documents: |
    ${V4}
    kind: ClusterConfiguration
    apiServer: {certSANs: ["not a name"]}
`),
    ).toEqual([
      'cluster.yaml: kubeadm.documents: ClusterConfiguration.apiServer.certSANs: "not a name" is not a valid IP address, DNS name or wildcard DNS name',
    ]);
  });

  it.each([
    ["no readFile given", undefined, "cannot be read here"],
    ["a file that is not there", readFile, "cannot read /work/cfg/missing.yaml: ENOENT"],
  ])("reports a configFile it cannot read (%s)", (_name, reader, problem) => {
    const problems = problemsOf(`${HEAD}kubeadm: {configFile: missing.yaml}\n`, {
      ...(reader ? { readFile: reader } : {}),
    });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^cluster\.yaml: kubeadm\.configFile: /);
    expect(problems[0]).toContain(problem);
  });

  it("refuses a kind given in two places", () => {
    expect(
      problemsOf(`${HEAD}kubeadm:
  documents: |
    ${V4}
    kind: ClusterConfiguration
---
${V4}
kind: ClusterConfiguration
`),
    ).toEqual([
      "cluster.yaml: kubeadm.documents: ClusterConfiguration is given twice (also in cluster.yaml); merge them into one document",
    ]);
  });

  it("refuses v1beta3 documents for a version whose kubeadm no longer reads them, naming each", () => {
    const old = (version: string) =>
      `${HEAD}kubernetesVersion: ${version}\n---\napiVersion: kubeadm.k8s.io/v1beta3\nkind: JoinConfiguration\n`;
    const why =
      'cluster.yaml: JoinConfiguration uses kubeadm.k8s.io/v1beta3, which kubeadm no longer reads from Kubernetes v1.37 (v1.37 here); write it as kubeadm.k8s.io/v1beta4 ("kubeadm config migrate" of kubeadm v1.36 converts it)';
    expect(problemsOf(old("v1.37.0"))).toEqual([why]);
    expect(problemsOf(old('"1.37"'))).toEqual([why]);
    // Still read by 1.36; a bare label is kept, for up to check once it is resolved.
    expect(load(old("v1.36.2"), { warn: () => {} }).kubeadm.v1beta3Documents).toEqual([
      "cluster.yaml: JoinConfiguration",
    ]);
    expect(load(old("stable"), { warn: () => {} }).kubeadm.v1beta3Documents).toEqual([
      "cluster.yaml: JoinConfiguration",
    ]);
  });

  it("warns about kubeadm's deprecated v1beta3 and kinds up does not use", () => {
    const warnings: string[] = [];
    load(
      `${HEAD}---
apiVersion: kubeadm.k8s.io/v1beta3
kind: ClusterConfiguration
---
${V4}
kind: ResetConfiguration
`,
      { warn: (m) => warnings.push(m) },
    );
    expect(warnings).toEqual([
      expect.stringContaining("deprecated API version kubeadm.k8s.io/v1beta3"),
      "cluster.yaml: ResetConfiguration is not used by kubeforge up and is ignored",
    ]);
  });

  it("keeps an UpgradeConfiguration for the upgrade (its timeouts), without a warning", () => {
    const warnings: string[] = [];
    const spec = load(
      `${HEAD}---
${V4}
kind: UpgradeConfiguration
timeouts: {upgradeManifests: 45s}
`,
      { warn: (m) => warnings.push(m) },
    );
    expect(spec.kubeadm.config?.upgrade?.timeouts).toEqual({ upgradeManifests: "45s" });
    expect(warnings).toEqual([]);
  });

  it.each([
    [
      "versions",
      "kubernetesVersion: v1.35.0",
      "kubernetesVersion: v1.34.1",
      'cluster.yaml: kubernetesVersion: "v1.35.0" differs from ClusterConfiguration.kubernetesVersion "v1.34.1" (in cluster.yaml); set it in one place',
    ],
    [
      "a minor and an exact version",
      'kubernetesVersion: "1.35"',
      "kubernetesVersion: v1.35.0",
      'cluster.yaml: kubernetesVersion: "stable-1.35" differs from ClusterConfiguration.kubernetesVersion "v1.35.0" (in cluster.yaml); set it in one place',
    ],
    [
      "pod subnets",
      "networking: {podSubnet: 10.244.0.0/16}",
      "networking: {podSubnet: 192.168.0.0/16}",
      'cluster.yaml: networking.podSubnet: "10.244.0.0/16" differs from ClusterConfiguration.networking.podSubnet "192.168.0.0/16" (in cluster.yaml); set it in one place',
    ],
    [
      "service subnets",
      "networking: {serviceSubnet: 10.96.0.0/12}",
      "networking: {serviceSubnet: 10.100.0.0/16}",
      'cluster.yaml: networking.serviceSubnet: "10.96.0.0/12" differs from ClusterConfiguration.networking.serviceSubnet "10.100.0.0/16" (in cluster.yaml); set it in one place',
    ],
    [
      "DNS domains",
      "networking: {dnsDomain: cluster.local}",
      "networking: {dnsDomain: k8s.test}",
      'cluster.yaml: networking.dnsDomain: "cluster.local" differs from ClusterConfiguration.networking.dnsDomain "k8s.test" (in cluster.yaml); set it in one place',
    ],
    [
      "endpoints",
      "controlPlaneEndpoint: a.example.com",
      "controlPlaneEndpoint: a.example.com:443",
      'cluster.yaml: controlPlaneEndpoint: "a.example.com:6443" differs from ClusterConfiguration.controlPlaneEndpoint "a.example.com:443" (in cluster.yaml); set it in one place',
    ],
  ])(
    "refuses a ClusterConfiguration that contradicts the Cluster: %s",
    (_n, mine, theirs, problem) => {
      expect(
        problemsOf(`${HEAD}${mine}\n---\n${V4}\nkind: ClusterConfiguration\n${theirs}\n`),
      ).toEqual([problem]);
    },
  );

  it.each([
    [
      "InitConfiguration",
      "nodeRegistration: {name: cp-1}",
      "cluster.yaml: InitConfiguration.nodeRegistration.name: node names come from the Cluster's nodes[].name; remove it",
    ],
    [
      "JoinConfiguration",
      "nodeRegistration: {name: w}",
      "cluster.yaml: JoinConfiguration.nodeRegistration.name: node names come from the Cluster's nodes[].name; remove it",
    ],
    [
      "InitConfiguration",
      "localAPIEndpoint: {advertiseAddress: 10.0.0.1}",
      "cluster.yaml: InitConfiguration.localAPIEndpoint.advertiseAddress: node addresses come from the Cluster's nodes[].address; remove it",
    ],
    [
      "JoinConfiguration",
      "controlPlane: {localAPIEndpoint: {advertiseAddress: 10.0.0.2}}",
      "cluster.yaml: JoinConfiguration.controlPlane.localAPIEndpoint.advertiseAddress: node addresses come from the Cluster's nodes[].address; remove it",
    ],
    [
      "JoinConfiguration",
      "discovery: {bootstrapToken: {apiServerEndpoint: '10.0.0.1:6443', token: abcdef.0123456789abcdef, unsafeSkipCAVerification: true}}",
      "cluster.yaml: JoinConfiguration.discovery: kubeforge up sets discovery itself (a fresh token and the CA pin); remove it",
    ],
    [
      "InitConfiguration",
      "dryRun: true",
      "cluster.yaml: InitConfiguration.dryRun: use kubeforge up --dry-run instead",
    ],
  ])("refuses %s settings kubeforge owns: %s", (kind, fields, problem) => {
    expect(problemsOf(`${HEAD}---\n${V4}\nkind: ${kind}\n${fields}\n`)).toEqual([problem]);
  });

  it("refuses taints and patches set in both places", () => {
    expect(
      problemsOf(`${HEAD}kubeadm: {patchesDir: p}
nodes:
- {name: cp-1, role: control-plane, host: local, taints: []}
---
${V4}
kind: InitConfiguration
nodeRegistration: {taints: []}
patches: {directory: /etc/kubeadm/patches}
`),
    ).toEqual([
      "cluster.yaml: InitConfiguration.nodeRegistration.taints: conflicts with nodes[0].taints; set taints on the Cluster's nodes only",
      "cluster.yaml: InitConfiguration.patches.directory: conflicts with the Cluster's kubeadm.patchesDir (which kubeforge copies to every node); keep one",
    ]);
  });
});

// ---- refused files ---------------------------------------------------------------------------

describe("refused Cluster files", () => {
  it.each<[string, string, string[]]>([
    [
      "an unknown field, with a suggestion",
      "kubernetesVerison: v1.35.0",
      ['cluster.yaml: kubernetesVerison: unknown field; did you mean "kubernetesVersion"?'],
    ],
    [
      "a misspelt node field",
      "nodes:\n- {name: cp-1, role: control-plane, host: local}\n- {name: w-1, rol: worker, host: local}",
      [
        'cluster.yaml: nodes[1].rol: unknown field; did you mean "role"?',
        "cluster.yaml: nodes[1].role: required: the node's role, control-plane or worker",
        "cluster.yaml: nodes[1].host: only one node can be local, and nodes[0] already is",
      ],
    ],
    [
      "an unknown field without a near name",
      "colour: blue",
      ["cluster.yaml: colour: unknown field"],
    ],
    [
      "nested unknown fields",
      "networking: {podCIDR: 10.0.0.0/16}\nssh: {fingerprints: []}\ncni: {type: none, image: x}",
      [
        "cluster.yaml: networking.podCIDR: unknown field",
        "cluster.yaml: cni.image: unknown field",
        "cluster.yaml: ssh.fingerprints: unknown field",
      ],
    ],
    [
      "wrong types",
      "concurrency: '8'\nnodes: {cp: local}\nssh: {port: '22', agent: yes please, hostKeyFingerprints: SHA256:x}\nname: [a]",
      [
        "cluster.yaml: name: must be a string, got a list",
        'cluster.yaml: ssh.port: must be an integer from 1 to 65535, got string "22"',
        'cluster.yaml: ssh.agent: must be true or false, got string "yes please"',
        'cluster.yaml: ssh.hostKeyFingerprints: must be a list, got string "SHA256:x"',
        "cluster.yaml: nodes: must be a list, got a mapping",
        'cluster.yaml: concurrency: must be an integer from 1 to 64, got string "8"',
      ],
    ],
    [
      "a version YAML reads as a number",
      "kubernetesVersion: 1.30",
      [
        'cluster.yaml: kubernetesVersion: YAML reads 1.3 as a number, and a number loses digits (1.30 becomes 1.3); write the version in quotes, for example "1.35" or "v1.35.2"',
      ],
    ],
    [
      "an unsupported version",
      "kubernetesVersion: v1.20.0",
      [
        "cluster.yaml: kubernetesVersion: Kubernetes version v1.20.0 is not supported: kubeforge supports",
      ],
    ],
    [
      "out of range",
      "concurrency: 65",
      ["cluster.yaml: concurrency: 65 is out of range; it must be from 1 to 64"],
    ],
    ["zero", "concurrency: 0", ["cluster.yaml: concurrency: 0 is out of range"]],
    [
      "a name that is not a DNS label",
      "name: My.Cluster",
      ['cluster.yaml: name: "My.Cluster" is not a DNS label'],
    ],
    ["a wait that is not a duration", "wait: 300", ['cluster.yaml: wait: "300" is not a duration']],
    ["a wait of zero", "wait: 0s", ['cluster.yaml: wait: "0s" must be longer than zero']],
    [
      "an endpoint that is not host:port",
      "controlPlaneEndpoint: https://api.example.com",
      [
        'cluster.yaml: controlPlaneEndpoint: "https://api.example.com" is not "host" or "host:port"',
      ],
    ],
    [
      "an endpoint port out of range",
      "controlPlaneEndpoint: api:70000",
      ['cluster.yaml: controlPlaneEndpoint: "api:70000" is not "host" or "host:port": port 70000'],
    ],
    [
      "a pod range that is not a CIDR",
      "networking: {podSubnet: 10.244.0.0}",
      ['cluster.yaml: networking.podSubnet: "10.244.0.0" is not a CIDR'],
    ],
    [
      "two pod ranges of one family",
      "networking: {podSubnet: '10.244.0.0/16,10.245.0.0/16'}",
      [
        'cluster.yaml: networking.podSubnet: "10.244.0.0/16,10.245.0.0/16" must be one CIDR, or two CIDRs (one IPv4, one IPv6) for dual-stack',
      ],
    ],
    [
      "a service range too large",
      "networking: {serviceSubnet: 10.0.0.0/8}",
      ["cluster.yaml: networking.serviceSubnet: 10.0.0.0/8 is too large"],
    ],
    [
      "a bad DNS domain",
      "networking: {dnsDomain: Cluster_Local}",
      ['cluster.yaml: networking.dnsDomain: "Cluster_Local" is not a valid DNS domain'],
    ],
    [
      "no pod range for the bridge CNI",
      "networking: {podSubnet: ''}",
      ["cluster.yaml: networking.podSubnet: the built-in bridge CNI needs a pod range"],
    ],
    [
      "an unknown CNI name",
      "cni: calico",
      ['cluster.yaml: cni: "calico" is not bridge, none, a manifest file'],
    ],
    [
      "an http manifest",
      "cni: http://example.com/cni.yaml",
      ['cluster.yaml: cni: "http://example.com/cni.yaml": only https:// URLs are accepted'],
    ],
    [
      "a manifest type without a manifest",
      "cni: {type: manifest}",
      ["cluster.yaml: cni.manifest: required: a manifest path or https URL"],
    ],
    [
      "a manifest with another type",
      "cni: {type: none, manifest: x.yaml}",
      ["cluster.yaml: cni.manifest: is only used with type: manifest, not none"],
    ],
    [
      "an unknown CNI type",
      "cni: {type: weave}",
      ['cluster.yaml: cni.type: "weave" is not one of bridge, none, manifest'],
    ],
    ["an empty node list", "nodes: []", ["cluster.yaml: nodes: list at least one node"]],
    [
      "a node without anything",
      "nodes:\n- {}\n- ",
      [
        "cluster.yaml: nodes[1]: a node needs name, role and host",
        "cluster.yaml: nodes[0].name: required: the Kubernetes node name",
        "cluster.yaml: nodes[0].role: required",
        "cluster.yaml: nodes[0].host: required",
        "cluster.yaml: nodes[1].name: required",
        "cluster.yaml: nodes[1].role: required",
        "cluster.yaml: nodes[1].host: required",
      ],
    ],
    [
      "no control plane",
      "nodes:\n- {name: w-1, role: worker, host: local}",
      ["cluster.yaml: nodes: at least one node must have role control-plane"],
    ],
    [
      "an unknown role",
      "nodes:\n- {name: cp-1, role: control-plain, host: local}",
      [
        'cluster.yaml: nodes[0].role: "control-plain" is not a role; use control-plane or worker (did you mean "control-plane"?)',
      ],
    ],
    [
      "bad node names, repeated names",
      "nodes:\n- {name: CP_1, role: control-plane, host: local}\n- {name: w, role: worker, host: 'ssh://u@a', ssh: {agent: true, acceptNewHostKeys: true}}\n- {name: w, role: worker, host: 'ssh://u@b', ssh: {agent: true, acceptNewHostKeys: true}}",
      [
        'cluster.yaml: nodes[0].name: "CP_1" is not a valid node name',
        'cluster.yaml: nodes[2].name: "w" is already the name of nodes[1]',
      ],
    ],
    [
      "two nodes on one SSH target, however it is spelt",
      `${SSH_OK}nodes:\n- {name: a, role: control-plane, host: 'ssh://ubuntu@[fd00::1]'}\n- {name: b, role: worker, host: 'ssh://root@[FD00:0::1]:22'}`,
      ["cluster.yaml: nodes[1].host: [fd00::1]:22 is already the SSH target of nodes[0]"],
    ],
    [
      "hosts that are neither local nor ssh://",
      "nodes:\n- {name: a, role: control-plane, host: 10.0.0.1}\n- {name: b, role: worker, host: 'ssh://u@fd00::2'}",
      [
        'cluster.yaml: nodes[0].host: "10.0.0.1" is not valid: it must be "local", "docker" or an ssh:// URL',
        'cluster.yaml: nodes[1].host: "ssh://u@fd00::2" is not valid: an IPv6 address must be in brackets',
      ],
    ],
    [
      "addresses that are not IPs, or taken",
      "nodes:\n- {name: a, role: control-plane, host: local, address: node-a}\n- {name: b, role: worker, host: 'ssh://u@b', address: 10.0.0.2, ssh: {agent: true, acceptNewHostKeys: true}}\n- {name: c, role: worker, host: 'ssh://u@c', address: 10.0.0.2, ssh: {agent: true, acceptNewHostKeys: true}}",
      [
        'cluster.yaml: nodes[0].address: "node-a" is not an IP address',
        "cluster.yaml: nodes[2].address: 10.0.0.2 is already an address of nodes[1]",
      ],
    ],
    [
      "bad labels",
      "nodes:\n- {name: a, role: control-plane, host: local, labels: {'-bad': x, ok: 'not ok', 'a/b/c': y}}",
      [
        'cluster.yaml: nodes[0].labels: "-bad" is not a valid label key',
        'cluster.yaml: nodes[0].labels.ok: "not ok" is not a valid label value',
        'cluster.yaml: nodes[0].labels: "a/b/c" is not a valid label key',
      ],
    ],
    [
      "bad taints",
      "nodes:\n- {name: a, role: control-plane, host: local, taints: [{effect: NoSchedule}, {key: k, value: 'a b', effect: Never}, {key: k2, effect: NoSchedule, timeAdded: x}]}",
      [
        "cluster.yaml: nodes[0].taints[2].timeAdded: unknown field",
        "cluster.yaml: nodes[0].taints[0].key: required: the taint key",
        'cluster.yaml: nodes[0].taints[1].value: "a b" is not a valid taint value',
        'cluster.yaml: nodes[0].taints[1].effect: "Never" is not one of NoSchedule, PreferNoSchedule, NoExecute',
      ],
    ],
    [
      "ssh settings on the local node",
      "nodes:\n- {name: a, role: control-plane, host: local, ssh: {user: x}}",
      ["cluster.yaml: nodes[0].ssh: the node is local; ssh settings apply only to ssh:// hosts"],
    ],
    [
      "bad phase names",
      "skipPhases: ['addon/kube proxy', '']",
      [
        'cluster.yaml: skipPhases[0]: "addon/kube proxy" is not a phase name',
        'cluster.yaml: skipPhases[1]: "" is not a phase name',
      ],
    ],
    [
      "a path under another user's home",
      "kubeletBinary: ~bob/kubelet",
      [
        'cluster.yaml: kubeletBinary: "~bob/kubelet": only "~/" (the runner\'s own home) is expanded',
      ],
    ],
  ])("%s", (_name, body, expected) => {
    const problems = problemsOf(`${HEAD}${body}\n`);
    expect(problems).toHaveLength(expected.length);
    expected.forEach((e, i) => expect(problems[i]).toContain(e));
  });

  it.each<[string, string, string[]]>([
    [
      "no user anywhere",
      "ssh: {privateKeyFile: /k, acceptNewHostKeys: true}\nnodes:\n- {name: cp-1, role: control-plane, host: 'ssh://10.0.0.1'}\n- {name: w-1, role: worker, host: 'ssh://10.0.0.2'}",
      [
        "cluster.yaml: ssh.user: no SSH user for nodes[0] (cp-1), nodes[1] (w-1); write it in the host URL (ssh://user@host) or set ssh.user",
      ],
    ],
    [
      "no credentials",
      "ssh: {user: u, acceptNewHostKeys: true}\nnodes:\n- {name: cp-1, role: control-plane, host: 'ssh://10.0.0.1'}",
      [
        "cluster.yaml: ssh: no SSH credentials for nodes[0] (cp-1); set ssh.privateKeyFile, ssh.privateKey, ssh.password or ssh.agent: true",
      ],
    ],
    [
      "no host-key policy, for some nodes",
      "ssh: {user: u, agent: true}\nnodes:\n- {name: cp-1, role: control-plane, host: 'ssh://10.0.0.1', ssh: {acceptNewHostKeys: true}}\n- {name: w-1, role: worker, host: 'ssh://10.0.0.2'}\n- {name: w-2, role: worker, host: 'ssh://10.0.0.3', ssh: {acceptNewHostKeys: false}}",
      [
        'cluster.yaml: ssh: no host-key policy for nodes[1] (w-1), nodes[2] (w-2); set ssh.hostKeyFingerprints (pins such as "SHA256:..."), ssh.knownHosts or ssh.acceptNewHostKeys: true',
      ],
    ],
    [
      "a key inline and in a file",
      `ssh: {user: u, acceptNewHostKeys: true, privateKeyFile: /k, privateKey: "${KEY.replace(/\n/g, "\\n")}"}`,
      ["cluster.yaml: ssh: set privateKey (the key itself) or privateKeyFile (a path), not both"],
    ],
    [
      "a passphrase without a key",
      "ssh: {user: u, password: pw, passphrase: pp, acceptNewHostKeys: true}\nnodes:\n- {name: cp-1, role: control-plane, host: 'ssh://10.0.0.1', ssh: {passphrase: other}}",
      [
        "cluster.yaml: ssh.passphrase: is set without privateKey or privateKeyFile",
        "cluster.yaml: nodes[0].ssh.passphrase: is set, but the node has no privateKey or privateKeyFile",
      ],
    ],
    [
      "pins and accept-new together",
      `ssh: {user: u, agent: true, hostKeyFingerprints: ["${FP}"], acceptNewHostKeys: true}`,
      ["cluster.yaml: ssh.acceptNewHostKeys: true accepts any host key"],
    ],
    [
      "bad pins and known_hosts lines",
      `ssh: {user: u, agent: true, hostKeyFingerprints: ["${FP}", "MD5:aa:bb"], knownHosts: ["h ssh-ed25519"]}`,
      [
        'cluster.yaml: ssh.hostKeyFingerprints[1]: "MD5:aa:bb" is an MD5 fingerprint',
        'cluster.yaml: ssh.knownHosts[0]: "h ssh-ed25519": a known_hosts line has at least three fields',
      ],
    ],
    [
      "a jump host that is not ssh://",
      "ssh: {user: u, agent: true, acceptNewHostKeys: true, jumpHost: bastion.example.com}",
      [
        'cluster.yaml: ssh.jumpHost: "bastion.example.com" is not valid: it must be "local", "docker" or an ssh:// URL',
      ],
    ],
    [
      "a local jump host",
      "ssh: {user: u, agent: true, acceptNewHostKeys: true, jumpHost: local}",
      ['cluster.yaml: ssh.jumpHost: "local" is not valid: it must be an ssh:// URL'],
    ],
    [
      "a user and port that contradict the host URL",
      "ssh: {agent: true, acceptNewHostKeys: true}\nnodes:\n- {name: cp-1, role: control-plane, host: 'ssh://ubuntu@10.0.0.1:22', ssh: {user: admin, port: 2222}}",
      [
        'cluster.yaml: nodes[0].ssh.user: "admin" differs from the user "ubuntu" in nodes[0].host; set it in one place',
        "cluster.yaml: nodes[0].ssh.port: 2222 differs from the port 22 in nodes[0].host; set it in one place",
      ],
    ],
    [
      "a bad login name",
      "ssh: {user: 'bad user', agent: true, acceptNewHostKeys: true}",
      ['cluster.yaml: ssh.user: "bad user" is not a valid login name'],
    ],
  ])("ssh: %s", (_name, body, expected) => {
    const problems = problemsOf(`${HEAD}${body}\n`);
    expect(problems).toHaveLength(expected.length);
    expected.forEach((e, i) => expect(problems[i]).toContain(e));
  });

  it('needs HOME for "~/"', () => {
    expect(
      problemsOf(`${HEAD}${SSH_OK}`, { home: undefined }).filter((p) =>
        p.includes("privateKeyFile"),
      ),
    ).toEqual([
      'cluster.yaml: ssh.privateKeyFile: "~/.ssh/id_ed25519": "~" cannot be expanded: the home folder (HOME) is not known',
    ]);
  });

  it.each<[string, string, string]>([
    [
      "no Cluster document",
      `${V4}\nkind: ClusterConfiguration\n`,
      "cluster.yaml: no kubeforge.dev/v1alpha1 Cluster document",
    ],
    ["an empty file", "", "cluster.yaml: no kubeforge.dev/v1alpha1 Cluster document"],
    [
      "two Cluster documents",
      `${HEAD}---\n${HEAD}`,
      "cluster.yaml: documents 1 and 2 are both Cluster documents",
    ],
    [
      "another version of the API",
      "apiVersion: kubeforge.dev/v1beta1\nkind: Cluster\n",
      'cluster.yaml: document 1: apiVersion "kubeforge.dev/v1beta1" is not supported; use kubeforge.dev/v1alpha1',
    ],
    [
      "an unknown kubeforge kind",
      `${HEAD}---\napiVersion: kubeforge.dev/v1alpha1\nkind: Node\n`,
      'cluster.yaml: document 2: unknown kind "Node" for apiVersion "kubeforge.dev/v1alpha1"; only Cluster exists',
    ],
    [
      "a document without kind",
      `${HEAD}---\napiVersion: v1\n`,
      "cluster.yaml: document 2 has no apiVersion or no kind",
    ],
    [
      "a document that is a list",
      `${HEAD}---\n- a\n`,
      "cluster.yaml: document 2 is a list, not a mapping",
    ],
    ["not YAML", `${HEAD}nodes: [\n`, "cluster.yaml is not valid YAML at line"],
    [
      "a Cluster API object",
      `${HEAD}---\napiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\n`,
      'cluster.yaml: unknown document with apiVersion "cluster.x-k8s.io/v1beta1" and kind "Cluster"',
    ],
  ])("refuses %s", (_name, text, problem) => {
    const problems = problemsOf(text);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(problem);
  });

  it("reports every problem at once", () => {
    const problems = problemsOf(`${HEAD}name: X
kubernetesVersion: v1.0.0
cni: weave
wait: soon
nodes:
- {name: a, role: boss, host: local}
`);
    expect(problems.map((p) => p.split(":")[1]!.trim())).toEqual([
      "name",
      "kubernetesVersion",
      "cni",
      "nodes[0].role",
      "wait",
    ]);
  });

  it("warns (without refusing) about an even number of control planes", () => {
    const warnings: string[] = [];
    load(
      `${HEAD}${SSH_OK}nodes:\n- {name: a, role: control-plane, host: 'ssh://a'}\n- {name: b, role: control-plane, host: 'ssh://b'}\n`,
      { warn: (m) => warnings.push(m) },
    );
    expect(warnings).toEqual([expect.stringContaining("2 control-plane nodes: etcd keeps quorum")]);
  });
});

// ---- secrets ---------------------------------------------------------------------------------

describe("secrets", () => {
  const SECRETS = ["S3cretKeyMaterial", "pass-phrase-9", "hunter2", "sudo-pw-7"];
  const key = `-----BEGIN OPENSSH PRIVATE KEY-----\\n${SECRETS[0]}\\n-----END OPENSSH PRIVATE KEY-----`;

  it.each([
    [
      "valid values beside other problems",
      `ssh: {user: u, privateKey: "${key}", passphrase: ${SECRETS[1]}, password: ${SECRETS[2]}, sudoPassword: ${SECRETS[3]}, acceptNewHostKeys: true}\nnodes: [{name: cp, role: control-plane, host: 'ssh://10.0.0.1'}]\ncni: nope`,
    ],
    ["a key that is not one", `ssh: {privateKey: "${SECRETS[0]}"}`],
    [
      "a key given as a list",
      `ssh: {privateKey: ["${SECRETS[0]}"], passphrase: [${SECRETS[1]}], password: {x: ${SECRETS[2]}}, sudoPassword: [${SECRETS[3]}]}`,
    ],
    ["a key pasted into privateKeyFile", `ssh: {privateKeyFile: "${key}"}`],
    [
      "a key and a key file",
      `ssh: {privateKeyFile: /k, privateKey: "${SECRETS[0]}", passphrase: ${SECRETS[1]}}`,
    ],
    [
      "misspelt secret fields",
      `ssh: {privatekey: "${key}", pasword: ${SECRETS[2]}, sudo_password: ${SECRETS[3]}}`,
    ],
    [
      "a password in a host URL",
      `nodes: [{name: cp, role: control-plane, host: 'ssh://u:${SECRETS[2]}@h'}]`,
    ],
    ["a password in the jump host URL", `ssh: {jumpHost: 'ssh://u:${SECRETS[2]}@bastion'}`],
    ["a sudo password of two lines", `ssh: {sudoPassword: "${SECRETS[3]}\\n${SECRETS[3]}"}`],
    [
      "a node's secrets",
      `nodes: [{name: cp, role: control-plane, host: 'ssh://u@h', ssh: {privateKey: "${SECRETS[0]}", password: [${SECRETS[2]}], passphrase: ${SECRETS[1]}}}]`,
    ],
  ])("never appear in a problem: %s", (_name, body) => {
    let message = "";
    try {
      load(`${HEAD}${body}\n`);
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).not.toBe("");
    for (const s of SECRETS) expect(message).not.toContain(s);
  });
});

describe("ssh.sudoPassword", () => {
  const nodes = "nodes: [{name: cp, role: control-plane, host: 'ssh://u@10.0.0.1'}]\n";

  it("drops the one trailing new line a YAML block or a saved secret carries", () => {
    for (const value of ["|\n    pw-1", '"pw-1\\n"', '"pw-1\\r\\n"']) {
      const spec = load(`${HEAD}${SSH_OK}  sudoPassword: ${value}\n${nodes}`);
      expect(spec.ssh.sudoPassword).toBe("pw-1");
    }
  });

  it("refuses a new line inside, naming the field and its origin, never the value", () => {
    expect(problemsOf(`${HEAD}${SSH_OK}  sudoPassword: "pw-1\\nrest"\n${nodes}`)).toEqual([
      expect.stringMatching(/^cluster\.yaml: ssh\.sudoPassword: holds a new line: /),
    ]);
    expect(
      problemsOf(`${HEAD}${SSH_OK}${nodes}`, {
        overrides: { sudoPassword: "pw-1\n\n", from: { sudoPassword: "input ssh-sudo-password" } },
      }),
    ).toEqual([
      expect.stringMatching(
        /^cluster\.yaml: ssh\.sudoPassword \(from input ssh-sudo-password\): holds a new line: /,
      ),
    ]);
  });
});

// ---- overrides ------------------------------------------------------------------------------

describe("overrides (action inputs, flags)", () => {
  const from = {
    kubernetesVersion: "input kubernetes-version",
    podSubnet: "input pod-network-cidr",
    serviceSubnet: "input service-cidr",
    cni: "input cni",
    privateKey: "input ssh-private-key",
    hostKeyFingerprints: "input ssh-host-key-fingerprints",
    kubeadmDocuments: "input kubeadm-config",
    wait: "input wait",
    name: "input name",
  };

  it("win over the file's values", () => {
    const spec = load(
      `${HEAD}${SSH_OK}name: file
kubernetesVersion: v1.34.1
networking: {podSubnet: 10.1.0.0/16}
nodes: [{name: cp, role: control-plane, host: 'ssh://10.0.0.1'}]
`,
      {
        overrides: {
          name: "ci-b",
          kubernetesVersion: "1.35",
          podSubnet: "10.2.0.0/16",
          serviceSubnet: "10.3.0.0/16",
          cni: "none",
          wait: "10m",
          kubeletBinary: "/tmp/kubelet",
          skipPhases: ["addon/coredns"],
          privateKey: KEY,
          hostKeyFingerprints: [FP2],
          kubeadmDocuments: `${V4}\nkind: InitConfiguration\nskipPhases: [preflight]\n`,
          from,
        },
      },
    );
    expect(spec).toMatchObject({
      name: "ci-b",
      kubernetesVersion: "stable-1.35",
      networking: { podSubnet: "10.2.0.0/16", serviceSubnet: "10.3.0.0/16" },
      cni: { type: "none" },
      wait: "10m",
      kubeletBinary: "/tmp/kubelet",
      skipPhases: ["addon/coredns"],
    });
    // The key given replaces the file's key file rather than clashing with it.
    expect(spec.ssh.privateKey).toBe(KEY);
    expect(spec.ssh.privateKeyFile).toBeUndefined();
    expect(spec.nodes[0]!.ssh?.hostKeyFingerprints).toEqual([FP2]);
    expect(decodeConfigDocuments(spec.kubeadm.documents!, "d").init?.skipPhases).toEqual([
      "preflight",
    ]);
  });

  it("are named in problems by where they came from", () => {
    expect(
      problemsOf(`${HEAD}---\n${V4}\nkind: ClusterConfiguration\nkubernetesVersion: v1.34.1\n`, {
        overrides: {
          kubernetesVersion: "v1.35.0",
          podSubnet: "10.96.0.0/16",
          privateKey: "/home/me/.ssh/id",
          hostKeyFingerprints: ["SHA256:short"],
          cni: "flannel",
          kubeadmDocuments: `${V4}\nkind: JoinConfiguration\nnodeRegistraton: {}\n`,
          from,
        },
      }),
    ).toEqual([
      'input kubeadm-config: JoinConfiguration: unknown field "nodeRegistraton"',
      'cluster.yaml: kubernetesVersion (from input kubernetes-version): "v1.35.0" differs from ClusterConfiguration.kubernetesVersion "v1.34.1" (in cluster.yaml); set it in one place',
      expect.stringMatching(/^cluster\.yaml: cni \(from input cni\): "flannel" is not bridge/),
      "cluster.yaml: ssh.privateKey (from input ssh-private-key): holds the key itself, not a path; to name a key file use privateKeyFile",
      expect.stringMatching(
        /^cluster\.yaml: ssh\.hostKeyFingerprints\[0\] \(from input ssh-host-key-fingerprints\): "SHA256:short" is not/,
      ),
    ]);
  });
});

describe("registry", () => {
  const one = "nodes: [{name: cp, role: control-plane, host: local}]\n";

  it.each([
    ["true", { port: 5001 }],
    ["5002", { port: 5002 }],
    ['"5003"', { port: 5003 }],
    ["false", undefined],
  ])("registry: %s", (value, expected) => {
    expect(load(`${HEAD}${one}registry: ${value}\n`).registry).toEqual(expected);
  });

  it("is off by default", () => {
    expect(load(`${HEAD}${one}`)).not.toHaveProperty("registry");
  });

  it.each(["maybe", "0", "65536", "5001.5", "[5001]"])("refuses registry: %s", (value) => {
    const problems = problemsOf(`${HEAD}${one}registry: ${value}\n`);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^cluster\.yaml: registry: /);
  });

  it("refuses nodes behind a jump host, which cannot reach the runner", () => {
    expect(
      problemsOf(
        `${HEAD}${SSH_OK}  jumpHost: ssh://bastion.example.com\nregistry: true\nnodes: [{name: cp, role: control-plane, host: "ssh://10.0.0.1"}]\n`,
      ),
    ).toEqual([
      "cluster.yaml: registry: the registry on the runner cannot be reached from nodes behind ssh.jumpHost (cp)",
    ]);
  });

  it("names the input it came from", () => {
    expect(
      problemsOf(`${HEAD}${one}`, {
        overrides: { registry: "maybe", from: { registry: "input registry" } },
      }),
    ).toEqual([
      'cluster.yaml: registry (from input registry): "maybe" is not true, false or a port number from 1 to 65535',
    ]);
    const spec = load(`${HEAD}${one}registry: false\n`, {
      overrides: { registry: "true", from: { registry: "input registry" } },
    });
    expect(spec.registry).toEqual({ port: 5001 });
  });
});

// ---- helpers ---------------------------------------------------------------------------------

describe("runnerPathReferences", () => {
  it("lists the runner files a spec names, once each, URLs left out", () => {
    const spec = load(`${HEAD}${SSH_OK}cni: cni.yaml
kubeletBinary: https://example.com/kubelet
kubeadm: {patchesDir: patches}
nodes:
- {name: cp, role: control-plane, host: 'ssh://10.0.0.1', kubeletBinary: bin/kubelet}
- {name: w, role: worker, host: 'ssh://10.0.0.2', ssh: {privateKeyFile: /keys/w}}
`);
    expect(runnerPathReferences(spec)).toEqual([
      { field: "ssh.privateKeyFile", path: "/home/runner/.ssh/id_ed25519", kind: "file" },
      { field: "cni.manifest", path: "/work/cfg/cni.yaml", kind: "file" },
      { field: "kubeadm.patchesDir", path: "/work/cfg/patches", kind: "directory" },
      { field: "nodes[0].kubeletBinary", path: "/work/cfg/bin/kubelet", kind: "file" },
      { field: "nodes[1].ssh.privateKeyFile", path: "/keys/w", kind: "file" },
    ]);
  });
});

describe("holdsClusterDocument", () => {
  it.each([
    [HEAD, true],
    [`${V4}\nkind: InitConfiguration\n---\n${HEAD}`, true],
    ["apiVersion: kubeforge.dev/v1beta1\nkind: Cluster\n", true],
    [`${V4}\nkind: ClusterConfiguration\n`, false],
    ["apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\n", false],
    ["{", false],
  ])("%j → %s", (text, expected) => {
    expect(holdsClusterDocument(text, "f")).toBe(expected);
  });
});
