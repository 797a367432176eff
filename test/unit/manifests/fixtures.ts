import type { Release } from "../../../src/config/release.js";
import type { InitConfig } from "../../../src/config/types.js";
import { baseInitConfig, testRelease } from "../../support/init-fixtures.js";

// The manifest tests' configuration and releases: the shared defaulted configuration for node
// "cp-1" at 10.0.0.4, and the version table's own rows.

/** v1.33: numeric probe ports, etcd 3.5 (experimental-* flags), CRI socket as a kubelet flag. */
export const release133 = (): Release => testRelease(33);

/** v1.35: named probe ports, etcd 3.6 (feature-gate flags), NodeLocalCRISocket on. */
export const release135 = (): Release => testRelease(35);

/** A fresh defaulted configuration; `edit` changes it after defaulting. */
export function initConfig(edit?: (cfg: InitConfig) => void): InitConfig {
  return baseInitConfig({ nodeName: "cp-1", advertiseAddress: "10.0.0.4" }, edit);
}
