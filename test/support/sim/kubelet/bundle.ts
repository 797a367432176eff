import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildOptions } from "../../../../scripts/build-options.mjs";
import { sharedBundle } from "../../shared-bundle.js";

// SIMULATION (test double). The simulated kubelet runs as its own process (started by the
// systemctl shim), so it is bundled into one ES module the way kubeforge itself is bundled
// (scripts/build-options.mjs: the createRequire banner and __dirname CommonJS dependencies need).
// The bundle lives in the test run's shared folder, named by its content: kubelets started from
// it may outlive the test file that built it, and test files running in parallel share one copy.
// The simulated crictl is a bundle of its own: it runs once per command and must start quickly.

async function bundleEntry(name: string, entryFile: string): Promise<string> {
  const entry = fileURLToPath(new URL(entryFile, import.meta.url));
  const dir = await sharedBundle(name, (outdir) => ({
    ...buildOptions(outdir),
    entryPoints: { [name]: entry },
    outExtension: { ".js": ".mjs" },
    // One self-contained file (modules imported with import() inlined, not split off), not
    // minified: the simulated API server runs a function's own source text as a worker thread
    // (etcd-worker.ts), which must not call the bundle's helpers (keepNames' __name).
    splitting: false,
    minify: false,
    keepNames: false,
    legalComments: "none",
  }));
  return join(dir, `${name}.mjs`);
}

let bundled: Promise<string> | undefined;
let crictl: Promise<string> | undefined;

/** Bundles main.ts (once per process) and returns the path of the .mjs. */
export function bundleSimKubelet(): Promise<string> {
  bundled ??= bundleEntry("sim-kubelet", "./main.ts");
  return bundled;
}

/** Bundles crictl-main.ts (once per process) and returns the path of the .mjs. */
export function bundleSimCrictl(): Promise<string> {
  crictl ??= bundleEntry("sim-crictl", "./crictl-main.ts");
  return crictl;
}
