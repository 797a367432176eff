import { tryParseGoDurationNanos } from "../config/duration.js";
import { quoteValue } from "../config/values.js";
import { upgradeTargetVersion } from "../config/cluster/version.js";
import type { UpgradeOptions } from "../cluster/upgrade/data.js";
import { type ViaRequest, viaOption } from "../cluster/upgrade/route.js";
import { DEFAULT_PROBE_INTERVAL, probeOptions } from "../cluster/upgrade/probes/options.js";
import { readInputFileSync } from "../remote/runner-files.js";

// The upgrade rehearsal's inputs (upgrade-to, upgrade-via, upgrade-worker-batch,
// upgrade-drain-timeout, upgrade-probes, upgrade-max-api-downtime,
// upgrade-max-workload-error-rate, upgrade-max-workload-downtime, upgrade-probe-manifest,
// upgrade-probe-command, upgrade-kubelet-binary), read and checked as the CLI's `upgrade -f --to
// --via --worker-batch --drain-timeout --probe --max-api-downtime --max-workload-*
// --probe-manifest --probe-command --kubelet-binary` flags are:
// every problem is one sentence starting with the input, found before any host is contacted.

/** The `upgrade -f` run the inputs ask for after the cluster is built. */
export interface ActionUpgrade {
  /** upgrade-to as kubernetes-version takes it, normalized ("1.36" → "stable-1.36"); resolved when the run starts. */
  to: string;
  /** upgrade-worker-batch (--worker-batch): workers upgraded at once. */
  workerBatch: number;
  /** upgrade-drain-timeout (--drain-timeout), per worker. */
  drainTimeoutMs: number;
  /** upgrade-via (--via): the versions to go through first, or "auto"; absent: one hop. */
  via?: ViaRequest;
  /** upgrade-probes (--probe; default api) and the thresholds (--max-api-downtime, --max-workload-*). */
  probes: Pick<UpgradeOptions, "apiProbes" | "workloadProbes" | "thresholds">;
  /**
   * upgrade-kubelet-binary (--kubelet-binary): the user's kubelet build of the target, on every
   * node. Not kubelet-binary: that one is the build of kubernetes-version `up` installs, and the
   * upgrade's gate wants each kubelet to report the target.
   */
  kubeletBinary?: string;
}

type UpgradeInput =
  | "upgrade-to"
  | "upgrade-via"
  | "upgrade-worker-batch"
  | "upgrade-drain-timeout"
  | "upgrade-probes"
  | "upgrade-max-api-downtime"
  | "upgrade-max-workload-error-rate"
  | "upgrade-max-workload-downtime"
  | "upgrade-probe-manifest"
  | "upgrade-probe-command"
  | "upgrade-kubelet-binary";

/**
 * upgrade-probes: a list of api, workload (default api), or none; the thresholds: Go durations
 * and an error rate.
 */
function readProbeInputs(
  get: (name: UpgradeInput) => string,
  runnerPath: (value: string) => string,
  readText: (path: string) => string,
): ActionUpgrade["probes"] {
  const probes = get("upgrade-probes");
  const manifest = get("upgrade-probe-manifest");
  const command = get("upgrade-probe-command");
  const max = get("upgrade-max-api-downtime");
  const rate = get("upgrade-max-workload-error-rate");
  const down = get("upgrade-max-workload-downtime");
  return probeOptions(
    {
      probes: probes === "" ? ["api"] : probes.split(",").map((p) => p.trim()),
      interval: DEFAULT_PROBE_INTERVAL,
      // The probe namespace goes; teardown takes the cluster anyway unless it is kept.
      keep: false,
      ...(max !== "" ? { maxApiDowntime: max } : {}),
      ...(rate !== "" ? { maxWorkloadErrorRate: rate } : {}),
      ...(down !== "" ? { maxWorkloadDowntime: down } : {}),
      ...(manifest !== "" ? { manifest: { path: runnerPath(manifest), read: readText } } : {}),
      ...(command !== "" ? { command } : {}),
    },
    {
      probes: "input upgrade-probes",
      interval: "the probe interval",
      maxApiDowntime: "input upgrade-max-api-downtime",
      settle: "the settle time",
      maxWorkloadErrorRate: "input upgrade-max-workload-error-rate",
      maxWorkloadDowntime: "input upgrade-max-workload-downtime",
      manifest: "input upgrade-probe-manifest",
      command: "input upgrade-probe-command",
    },
  );
}

/** The CLI's defaults (cli/upgrade-cluster.ts): one worker at a time, 5m per drain. */
const DEFAULT_WORKER_BATCH = 1;
const DEFAULT_DRAIN_TIMEOUT_MS = 5 * 60_000;

/**
 * The upgrade inputs, undefined when upgrade-to is not given. `get` returns the trimmed input
 * ("" when not given); `installOnly` is the install-only input, which builds nothing to upgrade;
 * `runnerPath` resolves a path on the runner (an URL stays as it is); `readText` reads the probe
 * manifest.
 */
export function readUpgradeInputs(
  get: (name: UpgradeInput) => string,
  installOnly: boolean,
  runnerPath: (value: string) => string = (v) => v,
  readText: (path: string) => string = (p) => readInputFileSync(p, "the probe manifest"),
): ActionUpgrade | undefined {
  const fail = (name: string, problem: string): never => {
    throw new Error(`input ${name}: ${problem}`);
  };
  const to = get("upgrade-to");
  const batch = get("upgrade-worker-batch");
  const drain = get("upgrade-drain-timeout");
  const kubelet = get("upgrade-kubelet-binary");
  if (to === "") {
    for (const name of [
      "upgrade-via",
      "upgrade-worker-batch",
      "upgrade-drain-timeout",
      "upgrade-probes",
      "upgrade-max-api-downtime",
      "upgrade-kubelet-binary",
      "upgrade-max-workload-error-rate",
      "upgrade-max-workload-downtime",
      "upgrade-probe-manifest",
      "upgrade-probe-command",
    ] as const) {
      const value = get(name);
      if (value !== "") fail(name, "applies to an upgrade, and upgrade-to is not given");
    }
    return undefined;
  }
  if (installOnly) {
    fail("upgrade-to", "install-only builds no cluster, so there is nothing to upgrade");
  }
  let normalized: string;
  try {
    normalized = upgradeTargetVersion(to, "upgrade-to");
  } catch (e) {
    throw new Error(`input ${(e as Error).message}`, { cause: e });
  }
  if (batch !== "" && !/^[1-9]\d*$/.test(batch)) {
    fail("upgrade-worker-batch", `${quoteValue(batch)} is not a whole number of at least 1`);
  }
  let drainTimeoutMs = DEFAULT_DRAIN_TIMEOUT_MS;
  if (drain !== "") {
    const nanos = tryParseGoDurationNanos(drain);
    if (nanos === undefined || nanos <= 0n) {
      fail(
        "upgrade-drain-timeout",
        `${quoteValue(drain)} is not a positive Go duration (examples: "5m", "90s")`,
      );
    }
    drainTimeoutMs = Number(nanos) / 1e6;
  }
  const via = get("upgrade-via");
  return {
    to: normalized,
    ...(via !== "" ? { via: viaOption(via.split(","), "input upgrade-via") } : {}),
    workerBatch: batch === "" ? DEFAULT_WORKER_BATCH : Number(batch),
    drainTimeoutMs,
    probes: readProbeInputs(get, runnerPath, readText),
    ...(kubelet !== "" ? { kubeletBinary: runnerPath(kubelet) } : {}),
  };
}
