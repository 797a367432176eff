import { runCrictl } from "./crictl.js";
import { readFaults } from "./faults.js";
import { runtimeImageStore } from "./images.js";
import { RemoteRuntime } from "./runtime-client.js";

// SIMULATION (test double). Process entry of the simulated crictl (crictl.ts), run by the
// `crictl` shim on a simulated node's PATH:
//   crictl.mjs --sim-kubelet-script F --sim-runtime-dir D --sim-rootfs DIR --sim-time-scale X
//              <crictl's own command line>
// Bundled on its own (bundle.ts) so that each call starts in a fraction of a second; the runtime
// daemon it talks to is started from the simulated kubelet's bundle when nobody has yet.

async function main(): Promise<number> {
  let argv = process.argv.slice(2);
  const sim: Record<string, string> = {};
  while (argv[0]?.startsWith("--sim-") && argv.length > 1) {
    sim[argv[0].slice("--sim-".length)] = argv[1]!;
    argv = argv.slice(2);
  }
  const dir = sim["runtime-dir"];
  const kubelet = sim["kubelet-script"];
  if (!dir || !kubelet)
    throw new Error("the crictl shim passes --sim-runtime-dir and --sim-kubelet-script");
  const runtime = new RemoteRuntime(
    dir,
    [
      process.execPath,
      kubelet,
      "runtime",
      "--dir",
      dir,
      "--rootfs",
      sim.rootfs ?? "",
      "--time-scale",
      sim["time-scale"] ?? "1",
    ],
    () => {},
  );
  return runCrictl(
    argv,
    runtime,
    {
      out: (t) => void process.stdout.write(t),
      err: (t) => void process.stderr.write(t),
    },
    runtimeImageStore(dir),
    () => readFaults(dir),
  );
}

main().then(
  // Let stdout drain before exiting (a pipe may be slower than the process).
  (code) => process.stdout.write("", () => process.exit(code)),
  (e: Error) => {
    process.stderr.write(`simulated crictl: ${e.stack ?? e.message}\n`);
    process.exit(1);
  },
);
