import { parseGoDuration } from "../../../config/duration.js";
import type { UpgradeOptions } from "../data.js";
import type { Thresholds } from "./timeline.js";

// What to probe and which thresholds to hold, from the CLI's flags (--probe, --probe-interval,
// --keep-probes, --max-api-downtime) or the action's inputs (upgrade-probes,
// upgrade-max-api-downtime): one check for both, every problem one sentence naming the field,
// found before any host is contacted.

/** The probes kubeforge has; "none" turns them off. */
export const PROBES = ["api"] as const;

export const DEFAULT_PROBE_INTERVAL = "500ms";

export interface ProbeSettings {
  /** The probes asked for ("api"), or ["none"]. */
  probes: readonly string[];
  interval: string;
  keep: boolean;
  maxApiDowntime?: string;
}

/** How the edge calls each setting in messages: "--probe", "input upgrade-probes". */
export interface ProbeFieldNames {
  probes: string;
  interval: string;
  maxApiDowntime: string;
}

export function probeOptions(
  s: ProbeSettings,
  names: ProbeFieldNames,
): Pick<UpgradeOptions, "apiProbes" | "thresholds"> {
  const none = s.probes.length === 1 && s.probes[0] === "none";
  for (const p of none ? [] : s.probes) {
    if (!(PROBES as readonly string[]).includes(p)) {
      throw new Error(
        `${names.probes}: "${p}" is not a probe kubeforge has; give ${PROBES.join(", ")} or none`,
      );
    }
  }
  const api = !none && s.probes.includes("api");
  const intervalMs = parseGoDuration(s.interval, names.interval);
  if (intervalMs < 100) throw new Error(`${names.interval}: "${s.interval}" is below 100ms`);
  const thresholds: Thresholds = {};
  if (s.maxApiDowntime !== undefined) {
    if (!api) {
      throw new Error(`${names.maxApiDowntime}: needs the api probe, and ${names.probes} is none`);
    }
    const ms = parseGoDuration(s.maxApiDowntime, names.maxApiDowntime);
    if (ms < 0) throw new Error(`${names.maxApiDowntime}: "${s.maxApiDowntime}" is negative`);
    thresholds.maxApiDowntime = { text: s.maxApiDowntime, ms };
  }
  return { ...(api ? { apiProbes: { intervalMs, keep: s.keep } } : {}), thresholds };
}
