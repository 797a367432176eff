import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundledCli, type CliResult } from "../../support/cli.js";

// `kubeforge config print cluster-defaults` and `kubeforge config validate` on Cluster files, as
// a user runs them: the bundled CLI, real files, real exit codes.

type Kubeforge = (args: string[], opts?: { env?: NodeJS.ProcessEnv }) => Promise<CliResult>;
let kubeforge: Kubeforge;
let work: string;
let home: string;
let fingerprint: string;
const KEY_LINE = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ";

beforeAll(async () => {
  ({ kubeforge } = await bundledCli());
  work = await mkdtemp(join(tmpdir(), "kubeforge-cluster-cli-"));
  home = join(work, "home");
  await mkdir(join(home, ".ssh"), { recursive: true });
  execFileSync("ssh-keygen", [
    "-q",
    "-t",
    "ed25519",
    "-N",
    "",
    "-f",
    join(home, ".ssh", "id_ed25519"),
  ]);
  fingerprint = execFileSync(
    "ssh-keygen",
    ["-l", "-E", "sha256", "-f", join(home, ".ssh", "id_ed25519.pub")],
    {
      encoding: "utf8",
    },
  ).split(" ")[1]!;
}, 60_000);

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

async function file(name: string, text: string): Promise<string> {
  const path = join(work, name);
  await mkdir(join(path, ".."), { recursive: true });
  await writeFile(path, text);
  return path;
}

const validate = (path: string) =>
  kubeforge(["config", "validate", "--config", path], { env: { HOME: home } });

describe("kubeforge config print cluster-defaults", () => {
  it("prints a Cluster file that validates as printed", async () => {
    const printed = await kubeforge(["config", "print", "cluster-defaults"]);
    expect(printed.code).toBe(0);
    expect(printed.stdout).toMatch(/^apiVersion: kubeforge\.dev\/v1alpha1\nkind: Cluster$/m);
    const result = await validate(await file("defaults.yaml", printed.stdout));
    expect(result).toMatchObject({ code: 0, stdout: "ok\n" });
  });

  it("names the three things it can print when asked for another", async () => {
    const result = await kubeforge(["config", "print", "cluster"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("init-defaults, join-defaults or cluster-defaults");
  });
});

describe("kubeforge config validate --config <Cluster file>", () => {
  it("accepts the issue's example with kubeadm documents beside it, reading files relative to it", async () => {
    await file(
      "conf/kubeadm/join.yaml",
      "apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\n",
    );
    await file("conf/cni/calico.yaml", "kind: List\n");
    const path = await file(
      "conf/cluster.yaml",
      `apiVersion: kubeforge.dev/v1alpha1
kind: Cluster
kubernetesVersion: v1.35.0
cni: cni/calico.yaml
kubeadm:
  configFile: kubeadm/join.yaml
ssh:
  user: ubuntu
  privateKeyFile: ~/.ssh/id_ed25519      # or privateKey (inline), password, agent: true
  hostKeyFingerprints: ["${fingerprint}"]    # pins; or acceptNewHostKeys: true
  jumpHost: ssh://bastion.example.com
nodes:
- {name: cp-1, role: control-plane, host: "ssh://ubuntu@203.0.113.10:22"}
- {name: w-1, role: worker, host: "ssh://ubuntu@203.0.113.11"}
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
apiServer:
  certSANs: [api.example.com]
`,
    );
    const result = await validate(path);
    expect(result.stderr).toBe("");
    expect(result).toMatchObject({ code: 0, stdout: "ok\n" });
  });

  it("lists every problem, one line each, and exits 1", async () => {
    const path = await file(
      "bad.yaml",
      `apiVersion: kubeforge.dev/v1alpha1
kind: Cluster
networking: {podSubnet: 10.96.0.0/16}
nodes:
- {name: cp-1, rol: control-plane, host: local}
- {name: w-1, role: worker, host: "ssh://w1"}
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
networking: {podSubent: 10.0.0.0/16}
`,
    );
    const result = await validate(path);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr.trim().split("\n")).toEqual([
      `${path}: nodes[0].rol: unknown field; did you mean "role"?`,
      `${path}: ClusterConfiguration: unknown field "networking.podSubent"`,
      `${path}: nodes[0].role: required: the node's role, control-plane or worker`,
      `${path}: ssh.user: no SSH user for nodes[1] (w-1); write it in the host URL (ssh://user@host) or set ssh.user`,
      `${path}: ssh: no SSH credentials for nodes[1] (w-1); set ssh.privateKeyFile, ssh.privateKey, ssh.password or ssh.agent: true`,
      `${path}: ssh: no host-key policy for nodes[1] (w-1); set ssh.hostKeyFingerprints (pins such as "SHA256:..."), ssh.knownHosts or ssh.acceptNewHostKeys: true`,
    ]);
  });

  it("names a file the Cluster refers to that is not there", async () => {
    const path = await file(
      "missing.yaml",
      `apiVersion: kubeforge.dev/v1alpha1
kind: Cluster
ssh: {user: u, privateKeyFile: keys/none, acceptNewHostKeys: true}
kubeadm: {patchesDir: ~/.ssh/id_ed25519}
nodes: [{name: cp-1, role: control-plane, host: "ssh://10.0.0.1"}]
`,
    );
    const result = await validate(path);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `${path}: ssh.privateKeyFile: cannot use ${join(work, "keys/none")}: ENOENT`,
    );
    expect(result.stderr).toContain(
      `${path}: kubeadm.patchesDir: ${join(home, ".ssh/id_ed25519")} is not a directory`,
    );
  });

  it("never prints a secret from the file", async () => {
    const path = await file(
      "secret.yaml",
      `apiVersion: kubeforge.dev/v1alpha1
kind: Cluster
ssh:
  user: u
  privateKey: "-----BEGIN OPENSSH PRIVATE KEY-----\\n${KEY_LINE}\\n"
  password: [hunter2]
  sudoPassword: {pw: sudo-secret}
  acceptNewHostKeys: true
nodes: [{name: cp-1, role: control-plane, host: "ssh://u:pw-in-url@10.0.0.1"}]
`,
    );
    for (const debug of ["0", "1"]) {
      const result = await kubeforge(["config", "validate", "--config", path], {
        env: { HOME: home, KUBEFORGE_DEBUG: debug },
      });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain("ssh.privateKey: is not a private key");
      for (const secret of [KEY_LINE, "hunter2", "sudo-secret", "pw-in-url"]) {
        expect(result.stderr).not.toContain(secret);
      }
    }
  });

  it("still validates kubeadm files as kubeadm config validate", async () => {
    const good = await file(
      "kubeadm.yaml",
      "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n",
    );
    expect(await validate(good)).toMatchObject({ code: 0, stdout: "ok\n" });
    const bad = await file(
      "kubeadm-bad.yaml",
      "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nnetworking: {podSubent: x}\n",
    );
    const result = await validate(bad);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('ClusterConfiguration: unknown field "networking.podSubent"');
  });
});
