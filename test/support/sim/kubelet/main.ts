import { appendFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SimulatedKubelet } from "./kubelet.js";
import { runRuntimeDaemon } from "./runtime-daemon.js";
import { kubeletTiming, sleep } from "./timing.js";

// SIMULATION (test double). Process entry of the simulated kubelet, started by the systemctl
// shim (service-manager.ts) as systemd starts kubelet.service:
//   main.mjs --rootfs DIR --node-name N --log FILE [--pid-file F] [--runtime-dir D]
//            [--time-scale X] [--kubelet-version V] [--assume-network-ready]
//            [--pod-ip-range FIRST-LAST]   (the node's Pod addresses: pod-network.ts)
// and of its container runtime daemon (started by the kubelet on first use):
//   main.mjs runtime --dir D --rootfs DIR [--time-scale X]
// Runs until SIGTERM. A kubelet that fails to start is retried every RestartSec (10 s), as
// kubelet.service's Restart=always does (kubernetes/release: cmd/krel/templates/latest/kubelet/
// kubelet.service) — the crash loop of a node before `kubeadm init` or `join`.

function parseArgs(argv: string[]) {
  const flags: Record<string, string> = {};
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith("--")) {
      positional.push(a);
      continue;
    }
    const eq = a.indexOf("=");
    if (eq > 0) flags[a.slice(2, eq)] = a.slice(eq + 1);
    else if (i + 1 < argv.length && !argv[i + 1]!.startsWith("--")) flags[a.slice(2)] = argv[++i]!;
    else flags[a.slice(2)] = "true";
  }
  return { flags, positional };
}

function logger(file: string | undefined) {
  return (line: string) => {
    const text = `${new Date().toISOString()} ${line}\n`;
    if (file) appendFileSync(file, text);
    else process.stdout.write(text);
  };
}

function terminated(): Promise<void> {
  return new Promise((resolve) => {
    process.once("SIGTERM", () => resolve());
    process.once("SIGINT", () => resolve());
  });
}

async function runKubelet(flags: Record<string, string>): Promise<void> {
  const rootfs = flags.rootfs ?? "";
  const log = logger(flags.log);
  const timeScale = Number(flags["time-scale"] ?? "1");
  const runtimeDir = flags["runtime-dir"] ?? join(rootfs || "/", "run/kubeforge-sim");
  if (flags["pid-file"]) writeFileSync(flags["pid-file"], `${process.pid}\n`);
  const stopSignal = terminated();
  let stopping = false;
  void stopSignal.then(() => {
    stopping = true;
    log("[simulated kubelet] received SIGTERM: stopping");
  });
  const restartMs = kubeletTiming(timeScale).serviceRestartMs;
  log(`simulated kubelet process ${process.pid} (rootfs ${rootfs || "/"})`);
  while (!stopping) {
    const kubelet = new SimulatedKubelet({
      rootfs,
      ...(flags["node-name"] ? { nodeName: flags["node-name"] } : {}),
      log,
      timeScale,
      ...(flags["kubelet-version"] ? { kubeletVersion: flags["kubelet-version"] } : {}),
      assumeNetworkReady: flags["assume-network-ready"] === "true",
      ...(flags["pod-ip-range"] ? { podIPRange: flags["pod-ip-range"] } : {}),
      runtime: {
        dir: runtimeDir,
        command: [
          process.execPath,
          process.argv[1]!,
          "runtime",
          "--dir",
          runtimeDir,
          "--rootfs",
          rootfs,
          "--time-scale",
          String(timeScale),
        ],
      },
    });
    try {
      await Promise.race([kubelet.start(), stopSignal]);
      await stopSignal;
      await kubelet.stop();
    } catch (e) {
      log(`[simulated kubelet] command failed: ${(e as Error).message}`);
      await kubelet.stop().catch(() => undefined);
      log(`[simulated kubelet] kubelet.service: Scheduled restart job in ${restartMs} ms`);
      await Promise.race([sleep(restartMs), stopSignal]);
    }
  }
  if (flags["pid-file"]) rmSync(flags["pid-file"], { force: true });
}

async function main(): Promise<void> {
  const { flags, positional } = parseArgs(process.argv.slice(2));
  if (positional[0] === "runtime") {
    if (!flags.dir) throw new Error("runtime needs --dir");
    await runRuntimeDaemon({
      dir: flags.dir,
      rootfs: flags.rootfs ?? "",
      timeScale: Number(flags["time-scale"] ?? "1"),
      log: logger(undefined),
    });
  } else {
    await runKubelet(flags);
  }
  process.exit(0);
}

main().catch((e: Error) => {
  process.stderr.write(`simulated kubelet: ${e.stack ?? e.message}\n`);
  process.exit(1);
});
