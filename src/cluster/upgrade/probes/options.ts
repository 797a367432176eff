import { parseGoDuration } from "../../../config/duration.js";
import type { UpgradeOptions } from "../data.js";
import type { Thresholds } from "./timeline.js";
import { userWorkloadsFromManifest, type UserWorkloads } from "./user-workloads.js";

// What to probe and which thresholds to hold, from the CLI's flags (--probe, --probe-interval,
// --keep-probes, --settle, --max-api-downtime, --max-workload-error-rate,
// --max-workload-downtime) or the action's inputs (upgrade-probes, upgrade-max-api-downtime,
// upgrade-max-workload-error-rate, upgrade-max-workload-downtime): one check for both, every
// problem one sentence naming the field, found before any host is contacted.

/** The probes kubeforge has; "none" turns them off. */
export const PROBES = ["api", "workload", "dns"] as const;

export const DEFAULT_PROBE_INTERVAL = "500ms";
/** How long the settle gate between worker batches waits by default. */
export const DEFAULT_SETTLE = "5m";

export interface ProbeSettings {
  /** The probes asked for ("api", "workload", "dns"), or ["none"]. */
  probes: readonly string[];
  interval: string;
  keep: boolean;
  /** The settle gate's bound (--settle); default DEFAULT_SETTLE. */
  settle?: string;
  maxApiDowntime?: string;
  maxWorkloadErrorRate?: string;
  maxWorkloadDowntime?: string;
  /** The probe manifest (--probe-manifest): its path, and how the edge reads a file. */
  manifest?: { path: string; read: (path: string) => string };
  /** --probe-command: run on the runner every interval, exit status 0 is up. */
  command?: string;
}

/** How the edge calls each setting in messages: "--probe", "input upgrade-probes". */
export interface ProbeFieldNames {
  probes: string;
  interval: string;
  maxApiDowntime: string;
  settle?: string;
  maxWorkloadErrorRate?: string;
  maxWorkloadDowntime?: string;
  manifest?: string;
  command?: string;
}

function duration(text: string, field: string): { text: string; ms: number } {
  const ms = parseGoDuration(text, field);
  if (ms < 0) throw new Error(`${field}: "${text}" is negative`);
  return { text, ms };
}

/** "0.01" or "1%": a share of failed requests, 0 to 1. */
export function parseErrorRate(text: string, field: string): { text: string; rate: number } {
  const m = /^(\d+(?:\.\d+)?)(%?)$/.exec(text.trim());
  const rate = m ? Number(m[1]) / (m[2] ? 100 : 1) : NaN;
  if (!(rate >= 0 && rate <= 1)) {
    throw new Error(
      `${field}: "${text}" is not an error rate; give a share from 0 to 1 or 0% to 100%`,
    );
  }
  return { text, rate };
}

/** `none` alone turns every probe off. */
const isNone = (probes: readonly string[]) => probes.length === 1 && probes[0] === "none";

function checkProbes(probes: readonly string[], names: ProbeFieldNames): Set<string> {
  const none = isNone(probes);
  for (const p of none ? [] : probes) {
    if (!(PROBES as readonly string[]).includes(p)) {
      throw new Error(
        `${names.probes}: "${p}" is not a probe kubeforge has; give ${PROBES.join(", ")} (a list) or none`,
      );
    }
  }
  return new Set(none ? [] : probes);
}

/** The user's workloads the settings name, if any; they are the workload probe. */
function userWorkloads(
  s: ProbeSettings,
  names: ProbeFieldNames,
  wanted: Set<string>,
): UserWorkloads | undefined {
  if (s.manifest === undefined && s.command === undefined) return undefined;
  const field =
    s.manifest !== undefined
      ? (names.manifest ?? "probe-manifest")
      : (names.command ?? "probe-command");
  if (isNone(s.probes)) {
    throw new Error(
      `${field}: probes a workload, and ${names.probes} is none; give one or the other`,
    );
  }
  if (s.command !== undefined && s.command.trim() === "") {
    throw new Error(`${names.command ?? "probe-command"}: is empty; give a command for /bin/sh`);
  }
  wanted.add("workload");
  let fromManifest: Omit<UserWorkloads, "command"> = { objects: [], requests: [], deployments: [] };
  if (s.manifest) {
    try {
      fromManifest = userWorkloadsFromManifest(s.manifest.read(s.manifest.path), s.manifest.path);
    } catch (e) {
      throw new Error(`${names.manifest ?? "probe-manifest"}: ${(e as Error).message}`, {
        cause: e,
      });
    }
  }
  return { ...fromManifest, ...(s.command !== undefined ? { command: s.command } : {}) };
}

export function probeOptions(
  s: ProbeSettings,
  names: ProbeFieldNames,
): Pick<UpgradeOptions, "apiProbes" | "workloadProbes" | "thresholds"> {
  const wanted = checkProbes(s.probes, names);
  const user = userWorkloads(s, names, wanted);
  const intervalMs = parseGoDuration(s.interval, names.interval);
  if (intervalMs < 100) throw new Error(`${names.interval}: "${s.interval}" is below 100ms`);
  const needs = (field: string, probe: string) => {
    if (!wanted.has(probe)) {
      throw new Error(`${field}: needs the ${probe} probe, and ${names.probes} does not name it`);
    }
  };
  const thresholds: Thresholds = {};
  if (s.maxApiDowntime !== undefined) {
    needs(names.maxApiDowntime, "api");
    thresholds.maxApiDowntime = duration(s.maxApiDowntime, names.maxApiDowntime);
  }
  if (s.maxWorkloadErrorRate !== undefined) {
    const field = names.maxWorkloadErrorRate ?? "max-workload-error-rate";
    needs(field, "workload");
    thresholds.maxWorkloadErrorRate = parseErrorRate(s.maxWorkloadErrorRate, field);
  }
  if (s.maxWorkloadDowntime !== undefined) {
    const field = names.maxWorkloadDowntime ?? "max-workload-downtime";
    needs(field, "workload");
    thresholds.maxWorkloadDowntime = duration(s.maxWorkloadDowntime, field);
  }
  if (wanted.has("dns")) {
    // The lookup runs in the canary's Pods; the user's workloads replace the canary.
    if (user) {
      const replacing =
        user.source !== undefined
          ? (names.manifest ?? "probe-manifest")
          : (names.command ?? "probe-command");
      throw new Error(
        `${names.probes}: dns looks up from kubeforge's canary Pods, which ${replacing} replaces; drop one`,
      );
    }
    if (!wanted.has("workload")) {
      throw new Error(
        `${names.probes}: dns looks up from the workload canary's Pods; name workload too (api,workload,dns)`,
      );
    }
  }
  const settle = duration(s.settle ?? DEFAULT_SETTLE, names.settle ?? "settle");
  return {
    ...(wanted.has("api") ? { apiProbes: { intervalMs, keep: s.keep } } : {}),
    ...(wanted.has("workload")
      ? {
          workloadProbes: {
            intervalMs,
            keep: s.keep,
            settleMs: settle.ms,
            ...(user ? { user } : {}),
            ...(wanted.has("dns") ? { dns: true } : {}),
          },
        }
      : {}),
    thresholds,
  };
}
