// The simulated container runtime daemon (test/support/sim/kubelet/runtime-daemon.ts) is
// started by whoever asks it first: the kubelet, or one of several simulated crictl processes
// kubeforge runs at once. However many start together, one runs: the others find it answering
// and exit, so a node's teardown (which shuts down the daemon on the socket) leaves none behind.
import { execFile, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { bundleSimCrictl, bundleSimKubelet } from "../../support/sim/kubelet/bundle.js";
import { installCrictlShim } from "../../support/sim/kubelet/crictl.js";
import {
  RemoteRuntime,
  RUNTIME_LOG,
  RUNTIME_PIDFILE,
  RUNTIME_SOCKET,
} from "../../support/sim/kubelet/runtime-client.js";
import { eventually } from "../../support/processes.js";
import { fileDir } from "../../support/temp-dir.js";

/** Pids of the runtime daemons whose --dir is `dir`. */
function daemonsOf(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
    } catch {
      continue;
    }
    const at = argv.indexOf("--dir");
    if (argv.includes("runtime") && at > 0 && argv[at + 1] === dir) pids.push(Number(entry));
  }
  return pids;
}

/** Whether the process is gone from the process table (kill 0 finds no such process). */
function reaped(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
}

/** The daemons of `dir` once there are `count` of them, or after 30 s whatever there are. */
async function settled(dir: string, count: number): Promise<number[]> {
  await eventually(() => daemonsOf(dir).length === count, 30_000);
  return daemonsOf(dir);
}

const runtimes: RemoteRuntime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((rt) => rt.shutdown()));
});

describe("the simulated container runtime daemon", () => {
  it("runs once when several clients start it at the same moment; shutdown leaves none", async () => {
    const script = await bundleSimKubelet();
    const dir = await fileDir("sim-runtime-");
    const rootfs = await fileDir("sim-rootfs-");
    const command = [process.execPath, script, "runtime", "--dir", dir, "--rootfs", rootfs];
    const clients = Array.from({ length: 4 }, () => new RemoteRuntime(dir, command, () => {}));
    runtimes.push(clients[0]!);
    // Each finds no socket and starts a daemon; all of them are answered.
    const lists = await Promise.all(clients.map((c) => c.list()));
    expect(lists).toEqual([[], [], [], []]);
    const pids = await settled(dir, 1);
    expect(pids).toHaveLength(1);
    expect((await readFile(join(dir, RUNTIME_PIDFILE), "utf8")).trim()).toBe(String(pids[0]));
    await clients[0]!.shutdown();
    expect(await settled(dir, 0)).toEqual([]);
  }, 60_000);

  it("replaces a socket nobody answers on, left by a daemon that was killed", async () => {
    const script = await bundleSimKubelet();
    const dir = await fileDir("sim-runtime-");
    const rootfs = await fileDir("sim-rootfs-");
    const command = [process.execPath, script, "runtime", "--dir", dir, "--rootfs", rootfs];
    const first = new RemoteRuntime(dir, command, () => {});
    runtimes.push(first);
    await first.list();
    const [killed] = await settled(dir, 1);
    process.kill(killed!, "SIGKILL");
    // Gone, its socket closed: reaped (this process started it), not only exiting — its command
    // line is empty, and `running` (processes.ts) false, before its socket is closed.
    await expect.poll(() => reaped(killed!), { timeout: 30_000 }).toBe(true);
    expect(readdirSync(dir)).toContain(RUNTIME_SOCKET);
    expect(await first.list()).toEqual([]);
    const pids = await settled(dir, 1);
    expect(pids).toHaveLength(1);
    expect(pids[0]).not.toBe(killed);
  }, 60_000);

  it("exits at once when one answers on its socket already", async () => {
    const script = await bundleSimKubelet();
    const dir = await fileDir("sim-runtime-");
    const rootfs = await fileDir("sim-rootfs-");
    const command = [process.execPath, script, "runtime", "--dir", dir, "--rootfs", rootfs];
    const client = new RemoteRuntime(dir, command, () => {});
    runtimes.push(client);
    await client.list();
    const [running] = await settled(dir, 1);
    const second = spawn(command[0]!, command.slice(1), { stdio: ["ignore", "ignore", "pipe"] });
    const code = await new Promise<number | null>((resolve) => second.on("exit", resolve));
    expect(code).toBe(0);
    expect(daemonsOf(dir)).toEqual([running]);
  }, 60_000);

  it("answers the crictl shim itself once it runs, as a crictl process would; before, the process answers and starts it", async () => {
    const [script, crictlScript] = await Promise.all([bundleSimKubelet(), bundleSimCrictl()]);
    const dir = await fileDir("sim-runtime-");
    const rootfs = await fileDir("sim-rootfs-");
    const binDir = await fileDir("sim-bin-");
    const shim = await installCrictlShim({
      binDir,
      crictlScript,
      kubeletScript: script,
      runtimeDir: dir,
      rootfs,
      timeScale: 1,
    });
    const command = [process.execPath, script, "runtime", "--dir", dir, "--rootfs", rootfs];
    runtimes.push(new RemoteRuntime(dir, command, () => {})); // shuts the daemon down
    const processArgs = [crictlScript, "--sim-kubelet-script", script, "--sim-runtime-dir", dir];
    const viaShim = (args: string[]) => run(shim, args);
    const viaProcess = (args: string[]) =>
      run(process.execPath, [...processArgs, "--sim-rootfs", rootfs, ...args]);
    const containerd = ["--runtime-endpoint", "unix:///run/containerd/containerd.sock"];

    // No daemon yet: the crictl process answers, and starts it.
    expect(await viaShim([...containerd, "pods", "-q"])).toEqual({ code: 0, out: "", err: "" });
    await settled(dir, 1);
    for (const args of [
      [...containerd, "version"],
      [...containerd, "pods"],
      [...containerd, "inspecti", "registry.k8s.io/pause:3.10.1"],
      [...containerd, "stopp", "no-such-pod"],
      ["--runtime-endpoint", "unix:///var/run/crio/crio.sock", "version"],
    ]) {
      const answered = await viaShim(args);
      expect(answered).toEqual(await viaProcess(args));
      // The daemon ran it: its log has the command line.
      expect(await readFile(join(dir, RUNTIME_LOG), "utf8")).toContain(
        `crictl ${args.join(" ")}: exit code ${answered.code}`,
      );
    }
    expect((await viaShim([...containerd, "version"])).out).toMatch(/^Version: {2}0\.1\.0\n/);
    expect((await viaShim([...containerd, "inspecti", "nope:1"])).code).toBe(1);
  }, 60_000);
});

/** A program's exit code and output, logrus's timestamps left out. */
function run(file: string, args: string[]): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(file, args, (error, out, err) => {
      const code = error ? Number((error as { code?: number }).code ?? 1) : 0;
      resolve({ code, out, err: err.replace(/time="[^"]*"/g, 'time="…"') });
    });
  });
}
