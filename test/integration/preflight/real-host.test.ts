// Preflight against the real machine: a LocalHost whose node files live under a temporary
// rootfs (the kernel's /proc, /sys and /dev stay the real ones), real listening sockets, real
// executables found or missing on a PATH the test controls, and the real kernel settings.
import { execFileSync } from "node:child_process";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execChecks, inPathCheck } from "../../../src/node/preflight/binaries.js";
import { lookPath } from "../../../src/node/lookpath.js";
import { PreflightError, runChecks } from "../../../src/node/preflight/checks.js";
import {
  dirAvailableCheck,
  fileAvailableCheck,
  fileContentCheck,
} from "../../../src/node/preflight/file-checks.js";
import { initNodeChecks } from "../../../src/node/preflight/init-checks.js";
import { portOpenCheck } from "../../../src/node/preflight/network-checks.js";
import { SWAP_WARNING, swapCheck } from "../../../src/node/preflight/resource-checks.js";
import { kubeletVersionCheck } from "../../../src/node/preflight/version-checks.js";
import { createPreflightPhase } from "../../../src/phases/init/preflight.js";
import { DryRunHost } from "../../../src/remote/dry-run.js";
import { LocalHost } from "../../../src/remote/local.js";
import type { PhaseContext } from "../../../src/workflow/phase.js";
import { recordingLogger, testInitData, testRelease } from "../../support/init-fixtures.js";
import { initConfig } from "../../unit/preflight/fixtures.js";

let work: string;
let rootfs: string;
let host: LocalHost;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "kubeforge-preflight-real-"));
  rootfs = join(work, "rootfs");
  await mkdir(rootfs);
  host = new LocalHost({ rootfs });
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

function listen(port: number, address: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(port, address, () => resolve(s));
  });
}
const close = (s: Server) => new Promise<void>((r) => s.close(() => r()));
const portOf = (s: Server) => (s.address() as { port: number }).port;

describe("Port-<n> with real sockets", () => {
  it.each(["127.0.0.1", "::"])(
    "turns to an error while a socket listens on %s, and clears",
    async (addr) => {
      const server = await listen(0, addr);
      const port = portOf(server);
      const check = portOpenCheck(host, port);
      expect(check.name()).toBe(`Port-${port}`);
      expect(await check.check()).toEqual({ warnings: [], errors: [`Port ${port} is in use`] });
      await close(server);
      expect(await check.check()).toEqual({ warnings: [], errors: [] });
    },
  );

  it("checks the configured API server bind port in the init list", async () => {
    const server = await listen(0, "0.0.0.0");
    const port = portOf(server);
    try {
      const checks = await initNodeChecks(
        { cfg: initConfig({ bindPort: port }), release: testRelease(), host, proxyEnv: {} },
        {},
      );
      const check = checks.find((c) => c.name() === `Port-${port}`);
      expect(check).toBeDefined();
      expect((await check!.check()).errors).toEqual([`Port ${port} is in use`]);
    } finally {
      await close(server);
    }
  });
});

describe("files and directories under the rootfs", () => {
  it("FileAvailable fails for a manifest that exists in the rootfs only", async () => {
    const path = "/etc/kubernetes/manifests/etcd.yaml";
    const check = fileAvailableCheck(host, path);
    expect(check.name()).toBe("FileAvailable--etc-kubernetes-manifests-etcd.yaml");
    expect((await check.check()).errors).toEqual([]);
    await mkdir(join(rootfs, "etc/kubernetes/manifests"), { recursive: true });
    await writeFile(join(rootfs, path), "kind: Pod\n");
    expect((await check.check()).errors).toEqual([`${path} already exists`]);
    await rm(join(rootfs, path));
  });

  it("DirAvailable passes for an absent or empty dir and fails for content or a file", async () => {
    const check = dirAvailableCheck(host, "/var/lib/etcd");
    expect(check.name()).toBe("DirAvailable--var-lib-etcd");
    const dir = join(rootfs, "var/lib/etcd");
    expect((await check.check()).errors).toEqual([]);
    await mkdir(dir, { recursive: true });
    expect((await check.check()).errors).toEqual([]);
    await writeFile(join(dir, "member"), "");
    expect((await check.check()).errors).toEqual(["/var/lib/etcd is not empty"]);
    await rm(dir, { recursive: true });
    await writeFile(dir, "not a directory");
    expect((await check.check()).errors).toEqual(["/var/lib/etcd is not empty"]);
    await rm(dir);
  });

  it("FileContent compares the first bytes of a file", async () => {
    const check = fileContentCheck(host, "/etc/flag", "1");
    expect((await check.check()).errors).toEqual(["/etc/flag does not exist"]);
    await writeFile(join(rootfs, "etc/flag"), "1\n");
    expect((await check.check()).errors).toEqual([]);
    await writeFile(join(rootfs, "etc/flag"), "0\n");
    expect((await check.check()).errors).toEqual(["/etc/flag contents are not set to 1"]);
  });
});

describe("the real kernel under a rootfs", () => {
  it("reads ip_forward from the real /proc, not from the rootfs", async () => {
    const real = await readFile("/proc/sys/net/ipv4/ip_forward", "utf8");
    const r = await fileContentCheck(host, "/proc/sys/net/ipv4/ip_forward", "1").check();
    expect(r.errors).toEqual(
      real.startsWith("1") ? [] : ["/proc/sys/net/ipv4/ip_forward contents are not set to 1"],
    );
  });

  it("reads swap from the real /proc/swaps", async () => {
    const lines = (await readFile("/proc/swaps", "utf8")).split("\n").filter((l) => l !== "");
    expect((await swapCheck(host).check()).warnings).toEqual(
      lines.length > 1 ? [SWAP_WARNING] : [],
    );
  });
});

describe("executables on a PATH the test controls", () => {
  let bin: string;
  beforeAll(async () => {
    bin = join(work, "bin");
    await mkdir(bin);
    for (const exe of ["ip", "iptables", "nsenter", "ethtool"]) {
      await writeFile(join(bin, exe), "#!/bin/sh\nexit 0\n", { mode: 0o755 });
    }
    await writeFile(join(bin, "mount"), "not executable\n", { mode: 0o644 });
  });

  it("finds executables by absolute path and misses the rest", async () => {
    expect(await lookPath(host, "ip", { searchPath: bin })).toBe(join(bin, "ip"));
    expect(await lookPath(host, "mount", { searchPath: bin })).toBeUndefined();
    expect(await lookPath(host, "socat", { searchPath: bin })).toBeUndefined();
  });

  it("the host's own PATH gives what the shell finds", async () => {
    const expected = execFileSync("sh", ["-c", "command -v ip || true"]).toString().trim();
    expect(await lookPath(host, "ip")).toBe(expected === "" ? undefined : expected);
  });

  it("mandatory ones missing are errors, optional ones warnings", async () => {
    const out = recordingLogger();
    const err = await runChecks(
      execChecks(host, "v1.35.0", { searchPath: bin }),
      new Set(),
      out,
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PreflightError);
    expect((err as PreflightError).failures).toEqual([
      { check: "FileExisting-mount", message: "mount not found in system path" },
    ]);
    expect(out.warnings).toEqual([
      "\t[WARNING FileExisting-ebtables]: ebtables not found in system path",
      "\t[WARNING FileExisting-socat]: socat not found in system path",
      "\t[WARNING FileExisting-tc]: tc not found in system path",
      "\t[WARNING FileExisting-touch]: touch not found in system path",
    ]);
    expect((await inPathCheck(host, "nsenter", true, { searchPath: bin }).check()).errors).toEqual(
      [],
    );
  });

  it("runs the kubelet it finds and compares its version", async () => {
    await writeFile(join(bin, "kubelet"), '#!/bin/sh\necho "Kubernetes v1.36.1"\n', {
      mode: 0o755,
    });
    await chmod(join(bin, "kubelet"), 0o755);
    expect(await kubeletVersionCheck(host, "v1.35.0", 35, { searchPath: bin }).check()).toEqual({
      warnings: [],
      errors: [
        'the kubelet version is higher than the control plane version. This is not a supported version skew and may lead to a malfunctional cluster. Kubelet version: "1.36.1" Control plane version: "1.35.0"',
      ],
    });
    expect(
      (await kubeletVersionCheck(host, "v1.36.3", 36, { searchPath: bin }).check()).errors,
    ).toEqual([]);
    await rm(join(bin, "kubelet"));
  });
});

describe("the preflight phase on this machine", () => {
  function context(): { ctx: PhaseContext; infos: string[]; warns: string[] } {
    const log = recordingLogger();
    return { infos: log.lines, warns: log.warnings, ctx: { path: "preflight", log } };
  }
  const kubeletOnPath =
    execFileSync("sh", ["-c", "command -v kubelet || true"]).toString().trim() !== "";

  it("reports what this machine lacks with kubeadm's aggregate error", async () => {
    const { ctx, infos } = context();
    const err = await createPreflightPhase().run!(testInitData(host, initConfig()), ctx).catch(
      (e: unknown) => e,
    );
    expect(infos[0]).toBe("Running pre-flight checks");
    const ipForward = (await readFile("/proc/sys/net/ipv4/ip_forward", "utf8")).startsWith("1");
    if (err === undefined) {
      expect(ipForward && kubeletOnPath).toBe(true);
      return;
    }
    expect(err).toBeInstanceOf(PreflightError);
    const failed = (err as PreflightError).failures.map((f) => f.check);
    expect(failed.includes("FileContent--proc-sys-net-ipv4-ip_forward")).toBe(!ipForward);
    expect(failed.includes("KubeletVersion")).toBe(!kubeletOnPath);
    expect(failed.includes("NumCPU")).toBe(cpus().length < 2);
    expect(failed.includes("Mem")).toBe(totalmem() / 1024 / 1024 < 1700);
    expect((err as Error).message).toMatch(
      /^\[preflight\] Some fatal errors occurred:\n(\t\[ERROR [^\]]+\]: .*\n)+\[preflight\] If you know what you are doing, you can make a check non-fatal with `--ignore-preflight-errors=\.\.\.`$/,
    );
  });

  it("with --ignore-preflight-errors=all prints the errors as warnings; the image pull needs a runtime", async () => {
    const { ctx, warns, infos } = context();
    const err = await createPreflightPhase().run!(
      testInitData(host, initConfig(), testRelease(), { ignorePreflightErrors: ["all"] }),
      ctx,
    ).catch((e: unknown) => e as Error);
    if (!kubeletOnPath) {
      expect(warns).toContain(
        "[WARNING KubeletVersion]: couldn't get kubelet version: cannot execute 'kubelet --version': exec: \"kubelet\": executable file not found in $PATH",
      );
    }
    // Every check passed or was ignored: preflight went on to pull. Without a runtime that
    // answers (kubeadm's Connect), nothing ignores that.
    expect(infos).toContain("Pulling images required for setting up a Kubernetes cluster");
    if (err !== undefined) {
      expect(err.message).toMatch(/^cannot pull the control-plane images: /);
    }
  });

  it("in a dry run reads the real kernel and the dry-run folder for node files", async () => {
    const dryRunDir = join(work, "dry-run");
    await mkdir(join(dryRunDir, "etc/kubernetes/manifests"), { recursive: true });
    await writeFile(join(dryRunDir, "etc/kubernetes/manifests/kube-apiserver.yaml"), "kind: Pod\n");
    const wouldRun: string[][] = [];
    const dry = new DryRunHost(new LocalHost(), dryRunDir, (_h, argv) => void wouldRun.push(argv));
    const { ctx, warns, infos } = context();
    await createPreflightPhase().run!(
      testInitData(dry, initConfig(), testRelease(), {
        ignorePreflightErrors: ["all"],
        dryRun: true,
      }),
      ctx,
    );
    expect(warns).toContain(
      "[WARNING FileAvailable--etc-kubernetes-manifests-kube-apiserver.yaml]: /etc/kubernetes/manifests/kube-apiserver.yaml already exists",
    );
    const ipForward = (await readFile("/proc/sys/net/ipv4/ip_forward", "utf8")).startsWith("1");
    expect(
      warns.some((w) => w.startsWith("[WARNING FileContent--proc-sys-net-ipv4-ip_forward]")),
    ).toBe(!ipForward);
    expect(infos.at(-1)).toBe("Would pull the required images (like 'kubeadm config images pull')");
    expect(wouldRun).toEqual([]); // every command preflight runs is read-only
  });
});
