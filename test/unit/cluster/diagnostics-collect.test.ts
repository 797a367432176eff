import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { collectDiagnostics } from "../../../src/cluster/diagnostics.js";
import type { ExecOptions, ExecResult } from "../../../src/remote/host.js";
import { LocalHost } from "../../../src/remote/local.js";
import { HostDouble, onPath, type CommandStub } from "../../support/host-double.js";

// The collection on a node whose sources fail in every way a real node's can: no journald, a
// runtime that cannot give one container's log, a command that never answers, a file root
// cannot read, files that are not there. Node files live in a rootfs (LocalHost); commands are
// stubbed (HostDouble) because no kubelet or container runtime runs here.

const CRICTL = "/usr/local/bin/crictl";
const ENDPOINT = "unix:///run/containerd/containerd.sock";
const TOKEN = "abcdef.0123456789abcdef";
const ID = (c: string) => c.repeat(64);

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

const privateKey = execFileSync("openssl", ["genpkey", "-algorithm", "ED25519"]).toString();
const keyLines = privateKey.split("\n").filter((l) => l && !l.startsWith("-----"));

/** A control-plane node's files, as kubeadm leaves them (with secrets planted to be cut). */
function nodeRootfs(): string {
  const rootfs = tempDir("kubeforge-diag-rootfs-");
  const put = (path: string, text: string) => {
    mkdirSync(dirname(join(rootfs, path)), { recursive: true });
    writeFileSync(join(rootfs, path), text);
  };
  put(
    "/etc/kubernetes/manifests/kube-apiserver.yaml",
    "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - command:\n    - kube-apiserver\n    - --token-auth-file=/etc/kubernetes/tokens.csv\n",
  );
  put(
    "/etc/kubernetes/manifests/etcd.yaml",
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd\n",
  );
  put("/etc/kubernetes/manifests/stray.key", privateKey); // a key someone left there
  put(
    "/var/lib/kubelet/kubeadm-flags.env",
    `KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=${ENDPOINT} --pod-infra-container-image=registry.k8s.io/pause:3.10"\n`,
  );
  put("/var/lib/kubelet/config.yaml", "kind: KubeletConfiguration\n");
  put(
    "/var/lib/kubeforge/node.json",
    '{"cluster":"ci","node":"cp-1","role":"control-plane","status":"started"}\n',
  );
  put("/var/log/pods/kube-system_kube-apiserver-cp-1_0f0f/kube-apiserver/0.log", "old attempt\n");
  put(
    "/var/log/pods/kube-system_kube-apiserver-cp-1_0f0f/kube-apiserver/1.log",
    Array.from({ length: 30 }, (_, i) => `apiserver line ${i}`).join("\n") + `\nUsing ${TOKEN}\n`,
  );
  return rootfs;
}

/** `tail -n N -- path` answered from the rootfs (LocalHost runs commands on the machine). */
function tailFromRootfs(rootfs: string): CommandStub {
  return {
    match: ["tail", "-n"],
    result: (argv) => {
      const lines = readFileSync(join(rootfs, argv[4]!), "utf8").replace(/\n$/, "").split("\n");
      return { stdout: lines.slice(-Number(argv[2])).join("\n") + "\n" };
    },
  };
}

const containersJSON = JSON.stringify({
  containers: [
    // An etcd that crash-looped: the newest attempt is the one to read.
    { id: ID("1"), metadata: { name: "etcd", attempt: 0 }, createdAt: "1700000000000000000" },
    { id: ID("2"), metadata: { name: "etcd", attempt: 1 }, createdAt: "1700000099000000000" },
    { id: ID("3"), metadata: { name: "kube-apiserver" }, createdAt: "1700000001000000000" },
    { id: ID("4"), metadata: { name: "kube-scheduler" }, createdAt: "1700000002000000000" },
  ],
});

const crictl = (...args: string[]) => [CRICTL, "--runtime-endpoint", ENDPOINT, ...args];

function failingNodeCommands(rootfs: string): CommandStub[] {
  return [
    onPath("crictl", CRICTL),
    { match: ["journalctl"], result: { code: 127, stderr: "journalctl: not found" } },
    {
      match: ["systemctl", "status", "kubelet"],
      result: { code: 3, stdout: "● kubelet.service\n   Active: activating (auto-restart)\n" },
    },
    { match: crictl("ps", "-a", "-o", "json"), result: { stdout: containersJSON } },
    {
      match: crictl("ps", "-a"),
      result: { stdout: "CONTAINER  IMAGE  STATE  NAME\n2222  etcd\n" },
    },
    {
      match: crictl("logs", "--tail", "1000", ID("2")),
      result: { stdout: "", stderr: `etcd started\n--token ${TOKEN}\n${privateKey}` },
    },
    {
      match: crictl("logs", "--tail", "1000", ID("3")),
      result: { code: 1, stderr: "rpc error: code = NotFound desc = container log gone\n" },
    },
    tailFromRootfs(rootfs),
  ];
}

/** HostDouble whose reads of one path are refused and whose one command never answers. */
class BrokenNode extends HostDouble {
  override readFile(path: string): Promise<Buffer> {
    if (path === "/var/lib/kubelet/config.yaml") {
      return Promise.reject(new Error(`EACCES: permission denied, open '${path}'`));
    }
    return super.readFile(path);
  }

  override exec(argv: string[], opts?: ExecOptions): Promise<ExecResult> {
    if (argv.includes("logs") && argv.includes(ID("4"))) return new Promise(() => {});
    return super.exec(argv, opts);
  }
}

function readAll(outDir: string, files: string[]) {
  return Object.fromEntries(files.map((f) => [relative(outDir, f), readFileSync(f, "utf8")]));
}

describe("collectDiagnostics", () => {
  it("writes every source's file, a note for each one that fails, and no secret", async () => {
    const rootfs = nodeRootfs();
    const outDir = tempDir("kubeforge-diag-out-");
    const host = new BrokenNode(new LocalHost({ rootfs, name: "cp-1" }), {
      commands: failingNodeCommands(rootfs),
    });
    const log: string[] = [];
    const { files } = await collectDiagnostics(host, "cp-1", {
      outDir,
      timeoutMs: 300,
      log: (l) => log.push(l),
      secrets: ["sudo-password-123"],
    });
    const got = readAll(outDir, files);
    expect(Object.keys(got).sort()).toEqual(
      [
        "cp-1/containers/etcd.log",
        "cp-1/containers/kube-apiserver.log",
        "cp-1/containers/kube-controller-manager.log",
        "cp-1/containers/kube-scheduler.log",
        "cp-1/crictl-ps.txt",
        "cp-1/kubeforge-node.json",
        "cp-1/kubelet.log",
        "cp-1/kubelet/config.yaml",
        "cp-1/kubelet/instance-config.yaml",
        "cp-1/kubelet/kubeadm-flags.env",
        "cp-1/manifests/etcd.yaml",
        "cp-1/manifests/kube-apiserver.yaml",
      ].sort(),
    );

    // No journald: said so, and the service manager's view instead.
    expect(got["cp-1/kubelet.log"]).toContain("journalctl is not installed on this node");
    expect(got["cp-1/kubelet.log"]).toContain("Active: activating (auto-restart)");
    // The runtime's containers, through the kubelet's own CRI endpoint.
    expect(got["cp-1/crictl-ps.txt"]).toContain(`${CRICTL} --runtime-endpoint ${ENDPOINT} ps -a`);
    // The newest etcd attempt, with the token secret and the key cut from its log.
    expect(got["cp-1/containers/etcd.log"]).toContain(`logs --tail 1000 ${ID("2")}`);
    expect(got["cp-1/containers/etcd.log"]).toContain("etcd started");
    // crictl could not give the API server's log: the kubelet's newest log file instead.
    expect(got["cp-1/containers/kube-apiserver.log"]).toContain("container log gone");
    expect(got["cp-1/containers/kube-apiserver.log"]).toContain(
      "/var/log/pods/kube-system_kube-apiserver-cp-1_0f0f/kube-apiserver/1.log",
    );
    expect(got["cp-1/containers/kube-apiserver.log"]).toContain("apiserver line 29");
    expect(got["cp-1/containers/kube-apiserver.log"]).not.toContain("old attempt");
    // A command that never answered and a container that does not exist: notes.
    expect(got["cp-1/containers/kube-scheduler.log"]).toMatch(
      /could not be collected: .*no answer/,
    );
    expect(got["cp-1/containers/kube-controller-manager.log"]).toMatch(
      /could not be collected: the container runtime has no kube-controller-manager container/,
    );
    // Files: copied (without the key file), refused (noted), missing (noted).
    expect(got["cp-1/manifests/kube-apiserver.yaml"]).toContain(
      "--token-auth-file=/etc/kubernetes/tokens.csv",
    );
    expect(got["cp-1/kubelet/kubeadm-flags.env"]).toContain(
      `--container-runtime-endpoint=${ENDPOINT}`,
    );
    expect(got["cp-1/kubelet/config.yaml"]).toMatch(/could not be collected: EACCES/);
    expect(got["cp-1/kubelet/instance-config.yaml"]).toMatch(/not present on this node/);
    expect(JSON.parse(got["cp-1/kubeforge-node.json"]!)).toMatchObject({ cluster: "ci" });

    const everything = Object.values(got).join("\n");
    expect(everything).not.toContain("0123456789abcdef");
    for (const line of keyLines) expect(everything).not.toContain(line);

    // Expected absences are quiet; real failures are logged.
    expect(log.some((l) => /cp-1: could not collect .*config\.yaml: EACCES/.test(l))).toBe(true);
    expect(log.some((l) => l.includes("instance-config.yaml"))).toBe(false);
    // Every command ran as root with a time limit.
    for (const c of host.calls.filter((c) => c.argv[0] !== "sh" && c.argv[0] !== "test")) {
      expect(c.opts, c.argv.join(" ")).toMatchObject({ sudo: true, timeoutMs: 300 });
    }
  }, 20_000);

  it("uses the kubelet's journal when journald has it", async () => {
    const rootfs = nodeRootfs();
    const outDir = tempDir("kubeforge-diag-out-");
    const host = new HostDouble(new LocalHost({ rootfs }), {
      commands: [
        {
          match: ["journalctl", "-u", "kubelet", "--no-pager", "-n", "50"],
          result: { stdout: `Jan 01 kubelet[1]: E0101 "Failed to get node" token=${TOKEN}\n` },
        },
        ...failingNodeCommands(rootfs),
      ],
    });
    await collectDiagnostics(host, "cp-1", { outDir, tailLines: 50 });
    const text = readFileSync(join(outDir, "cp-1/kubelet.log"), "utf8");
    expect(text).toContain("Failed to get node");
    expect(text).not.toContain("0123456789abcdef");
    expect(host.calls.some((c) => c.argv[0] === "systemctl")).toBe(false);
  });

  it("falls back from an empty journal, and notes a node without crictl", async () => {
    const rootfs = nodeRootfs();
    const outDir = tempDir("kubeforge-diag-out-");
    const host = new HostDouble(new LocalHost({ rootfs }), {
      commands: [
        onPath("crictl", undefined),
        { match: ["journalctl"], result: { stdout: "-- No entries --\n" } },
        {
          match: ["systemctl"],
          result: { code: 4, stderr: "Unit kubelet.service could not be found." },
        },
        tailFromRootfs(rootfs),
      ],
    });
    await collectDiagnostics(host, "cp-1", { outDir });
    const read = (f: string) => readFileSync(join(outDir, "cp-1", f), "utf8");
    expect(read("kubelet.log")).toContain("journald has no kubelet entries");
    expect(read("kubelet.log")).toContain("Unit kubelet.service could not be found.");
    expect(read("crictl-ps.txt")).toMatch(/could not be collected: crictl is not installed/);
    // Without crictl, the kubelet's log files still tell the API server's story.
    expect(read("containers/kube-apiserver.log")).toContain("apiserver line 29");
    expect(read("containers/etcd.log")).toMatch(
      /crictl is not installed.*no log under \/var\/log\/pods/,
    );
  });
});
