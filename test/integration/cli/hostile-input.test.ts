import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundledCli, type CliResult } from "../../support/cli.js";

// The bundled CLI given what a careless or hostile user gives it: each is refused at once with
// one clear error naming the file, flag or field, and no error quotes a secret or a file's
// content.

type Kubeforge = (args: string[], opts?: { timeoutMs?: number }) => Promise<CliResult>;
let kubeforge: Kubeforge;
let work: string;

beforeAll(async () => {
  ({ kubeforge } = await bundledCli());
  work = await mkdtemp(join(tmpdir(), "kubeforge-hostile-cli-"));
}, 60_000);

afterAll(async () => {
  // The bundle is the run's, shared with other files: only this file's folder goes.
  if (work) await rm(work, { recursive: true, force: true });
});

async function file(name: string, text: string): Promise<string> {
  const path = join(work, name);
  await writeFile(path, text);
  return path;
}

/** Runs the CLI and returns its result and how long it took. */
async function timed(args: string[]) {
  const started = Date.now();
  const result = await kubeforge(args, { timeoutMs: 60_000 });
  return { ...result, ms: Date.now() - started };
}

const CLUSTER = "apiVersion: kubeforge.dev/v1alpha1\nkind: Cluster\n";
const TOKEN = "abcdef.0123456789abcdef";

function aliasBomb(levels: number, prefix = ""): string {
  const lines = [`${prefix}a0: &a0 [x, x, x, x, x, x, x, x, x]`];
  for (let i = 1; i < levels; i++) {
    lines.push(
      `${prefix}a${i}: &a${i} [${Array(9)
        .fill(`*a${i - 1}`)
        .join(", ")}]`,
    );
  }
  return lines.join("\n");
}

describe("YAML that would cost too much to read", () => {
  it("an alias bomb in a Cluster file's kubeadm documents, and as --config", async () => {
    const kubeadm = `apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\n${aliasBomb(10, "x-")}\n`;
    const cluster = await file("bomb-cluster.yaml", `${CLUSTER}---\n${kubeadm}`);
    const up = await timed(["up", "--dry-run", "-f", cluster]);
    expect(up.code, up.stderr).toBe(1);
    expect(up.stderr).toContain("bomb-cluster.yaml: document 2 contains excessive aliasing");
    expect(up.ms).toBeLessThan(15_000);
    const config = await file("bomb-kubeadm.yaml", kubeadm);
    const init = await timed(["init", "--dry-run", "--config", config]);
    expect(init.code, init.stderr).toBe(1);
    expect(init.stderr).toContain(`${config}: document 1 contains excessive aliasing`);
  });

  it("a file over the size bound, and a long value, are named with their size, not echoed", async () => {
    const big = await file("big.yaml", `${CLUSTER}name: "${"n".repeat(9 * 1024 * 1024)}"\n`);
    const tooBig = await timed(["up", "--dry-run", "-f", big]);
    expect(tooBig.code).toBe(1);
    expect(tooBig.stderr.trim()).toMatch(
      /^the Cluster file \S+big\.yaml is \d+ bytes; kubeforge reads configuration files of at most \d+$/,
    );
    const long = await file("long.yaml", `${CLUSTER}name: "${"n".repeat(100_000)}"\n`);
    const longValue = await timed(["up", "--dry-run", "-f", long]);
    expect(longValue.code).toBe(1);
    expect(longValue.stderr).toContain("long.yaml: name: ");
    expect(longValue.stderr).toContain("(100000 characters)");
    expect(longValue.stderr.length).toBeLessThan(1000);
  });
});

describe("secrets given where they do not belong", () => {
  it("a token file given as the Cluster file or as --config is not printed", async () => {
    const tokenFile = await file("token.txt", `${TOKEN}\n`);
    for (const args of [
      ["up", "--dry-run", "-f", tokenFile],
      ["init", "--dry-run", "--config", tokenFile],
      ["config", "validate", "--config", tokenFile],
    ]) {
      const r = await timed(args);
      expect(r.code, args.join(" ")).toBe(1);
      expect(r.stderr).toContain("token.txt");
      expect(r.stderr).not.toContain("0123456789abcdef");
    }
  });

  it("a password in a host written without ssh:// is not printed", async () => {
    const path = await file(
      "password-host.yaml",
      `${CLUSTER}nodes: [{name: cp-1, role: control-plane, host: "ubuntu:hunter2@10.0.0.1"}]\n`,
    );
    const r = await timed(["up", "--dry-run", "-f", path]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('nodes[0].host: "ubuntu:***@10.0.0.1" is not valid');
    expect(r.stderr).not.toContain("hunter2");
  });
});

describe("files that are not files", () => {
  it("a FIFO as -f or --config is refused at once instead of blocking", async () => {
    const fifo = join(work, "fifo.yaml");
    execFileSync("mkfifo", [fifo]);
    for (const [args, what] of [
      [["up", "--dry-run", "-f", fifo], "the Cluster file"],
      [["init", "--dry-run", "--config", fifo], "--config file"],
    ] as const) {
      const r = await timed([...args]);
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr.trim()).toBe(`${what} ${fifo} is a FIFO; give a regular file`);
      expect(r.ms).toBeLessThan(15_000);
    }
  });

  it("upgrade --probe-manifest: a FIFO, and a manifest that cannot be probed, refused before any host is contacted", async () => {
    // The Cluster's one node is this runner: a run that went further would try to reach it.
    const cluster = await file("upgrade-cluster.yaml", CLUSTER);
    const fifo = join(work, "probes-fifo.yaml");
    execFileSync("mkfifo", [fifo]);
    const upgradeWith = (manifest: string) =>
      timed(["upgrade", "-f", cluster, "--to", "v1.36.3", "--probe-manifest", manifest]);
    const fromFifo = await upgradeWith(fifo);
    expect(fromFifo.code, fromFifo.stderr).toBe(1);
    expect(fromFifo.stderr.trim()).toBe(
      `--probe-manifest: the probe manifest ${fifo} is a FIFO; give a regular file`,
    );
    const pathOnConfigMap = await file(
      "probes.yaml",
      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  annotations: { kubeforge.dev/probe-url: /x }\n",
    );
    const bad = await upgradeWith(pathOnConfigMap);
    expect(bad.code, bad.stderr).toBe(1);
    expect(bad.stderr.trim()).toBe(
      `--probe-manifest: the probe manifest ${pathOnConfigMap}, object 1 (ConfigMap c): kubeforge.dev/probe-url "/x" is a path, which only a Service takes (asked through the API server's service proxy); give an http(s) URL the runner reaches`,
    );
    expect(bad.stdout).toBe("");
  });

  it("--discovery-file with an http:// URL says what is accepted", async () => {
    const r = await timed([
      "join",
      "--dry-run",
      "--discovery-file",
      "http://192.0.2.1/discovery.conf",
      "--tls-bootstrap-token",
      TOKEN,
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      '"http://192.0.2.1/discovery.conf": only https URLs and file paths are accepted',
    );
    expect(r.stderr).not.toContain("host paths must be absolute");
  });
});

describe("the kernel's folders under a dry run or a rootfs", () => {
  // /dev/shm is real and writable: a certificates folder there must stay inside the dry-run
  // folder or the rootfs, as every other host path does; only reads of /proc, /sys and /dev
  // (preflight) go to the machine.
  const NODE = ["--kubernetes-version", "v1.35.0", "--apiserver-advertise-address", "10.0.0.10"];
  const IGNORE = ["--node-name", "cp-1", "--ignore-preflight-errors", "all"];

  it("init --dry-run --cert-dir /dev/shm/... writes the keys into the dry-run folder only", async () => {
    const certDir = `/dev/shm/${work.split("/").pop()}-certs`;
    const out = await mkdtemp(join(tmpdir(), "kubeforge-hostile-dry-"));
    try {
      const r = await kubeforge(
        ["init", ...NODE, ...IGNORE, "--cert-dir", certDir, "--dry-run", "--dry-run-dir", out],
        { timeoutMs: 60_000 },
      );
      expect(r.code, r.stderr).toBe(0);
      expect(existsSync(certDir)).toBe(false);
      expect(existsSync(join(out, certDir, "ca.key"))).toBe(true);
      expect(existsSync(join(out, certDir, "apiserver.key"))).toBe(true);
    } finally {
      await rm(out, { recursive: true, force: true });
      await rm(certDir, { recursive: true, force: true });
    }
  });

  it("reset --rootfs R --cert-dir /dev/shm/... deletes under R, never the machine's files", async () => {
    const certDir = `/dev/shm/${work.split("/").pop()}-reset`;
    const rootfs = await mkdtemp(join(tmpdir(), "kubeforge-hostile-rootfs-"));
    try {
      await mkdir(certDir, { recursive: true });
      await writeFile(join(certDir, "ca.crt"), "the machine's own file\n");
      await mkdir(join(rootfs, certDir), { recursive: true });
      await writeFile(join(rootfs, certDir, "ca.crt"), "the rootfs's file\n");
      const r = await kubeforge(
        [
          "reset",
          "--rootfs",
          rootfs,
          "--cert-dir",
          certDir,
          "--force",
          "--skip-phases",
          "preflight",
        ],
        { timeoutMs: 60_000 },
      );
      expect(r.code, r.stderr).toBe(0);
      expect(await readFile(join(certDir, "ca.crt"), "utf8")).toBe("the machine's own file\n");
      expect(existsSync(join(rootfs, certDir, "ca.crt"))).toBe(false);
    } finally {
      await rm(rootfs, { recursive: true, force: true });
      await rm(certDir, { recursive: true, force: true });
    }
  });
});
