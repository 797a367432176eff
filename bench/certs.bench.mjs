// npm run bench: time of `kubeforge init phase certs all` + `init phase kubeconfig all`
// (RSA-2048, the bundled CLI as shipped, each a fresh process) as a ratio against openssl
// generating the same number of RSA-2048 keys one after another, measured in the same run.
// Rounds alternate which side goes first; the median ratio is the result. Goal: <= 0.6
// (kubeforge generates keys in parallel on every core and signs natively).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { buildOptions } from "../scripts/build-options.mjs";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const GOAL = 0.6;
const FLAGS = [
  "--kubernetes-version",
  "v1.35.0",
  "--apiserver-advertise-address",
  "10.0.0.10",
  "--node-name",
  "bench",
];

const bundle = mkdtempSync(join(tmpdir(), "kubeforge-bench-"));
await build(buildOptions(bundle));
const cli = join(bundle, "cli.js");

function countKeys(dir) {
  return readdirSync(dir, { recursive: true }).filter((f) => String(f).endsWith(".key")).length;
}

function timeKubeforge() {
  const rootfs = mkdtempSync(join(tmpdir(), "kubeforge-bench-rootfs-"));
  const started = performance.now();
  for (const phase of ["certs", "kubeconfig"]) {
    execFileSync(
      process.execPath,
      [cli, "init", "phase", phase, "all", ...FLAGS, "--rootfs", rootfs],
      { stdio: "ignore" },
    );
  }
  const ms = performance.now() - started;
  // Keys in pki/ plus one per kubeconfig file (admin, super-admin, kubelet, controller-manager, scheduler).
  const keys = countKeys(join(rootfs, "etc/kubernetes/pki")) + 5;
  rmSync(rootfs, { recursive: true, force: true });
  return { ms, keys };
}

function timeOpenssl(keys) {
  const started = performance.now();
  for (let i = 0; i < keys; i++) {
    execFileSync(
      "openssl",
      ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "/dev/null"],
      { stdio: "ignore" },
    );
  }
  return performance.now() - started;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ratios = [];
console.log(
  `kubeforge certs+kubeconfig vs sequential openssl RSA-2048 keygen (${availableParallelism()} cores, ${ROUNDS} rounds)`,
);
for (let round = 1; round <= ROUNDS; round++) {
  let kf, ref;
  if (round % 2) {
    kf = timeKubeforge();
    ref = timeOpenssl(kf.keys);
  } else {
    ref = timeOpenssl(16);
    kf = timeKubeforge();
    if (kf.keys !== 16) ref = (ref / 16) * kf.keys;
  }
  const ratio = kf.ms / ref;
  ratios.push(ratio);
  console.log(
    `round ${round}: kubeforge ${kf.ms.toFixed(0)} ms, openssl ${kf.keys} keys ${ref.toFixed(0)} ms, ratio ${ratio.toFixed(2)}`,
  );
}
rmSync(bundle, { recursive: true, force: true });
const result = median(ratios);
console.log(
  `median ratio ${result.toFixed(2)} (goal <= ${GOAL}): ${result <= GOAL ? "within goal" : "ABOVE GOAL"}`,
);
