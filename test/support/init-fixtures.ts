import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultInitConfig, normalizePreflightIgnores } from "../../src/config/defaults.js";
import { PLACEHOLDER_TOKEN } from "../../src/config/print.js";
import type { Release } from "../../src/config/release.js";
import type { InitConfig } from "../../src/config/types.js";
import { releaseFor } from "../../src/config/versions.js";
import type { InitData } from "../../src/phases/init/data.js";
import { NodeClusterAccess } from "../../src/kube/access.js";
import { KeyPool } from "../../src/pki/keys.js";
import type { Host } from "../../src/remote/host.js";
import { LocalHost } from "../../src/remote/local.js";
import type { Logger, Phase } from "../../src/workflow/phase.js";
import type { Reporter } from "../../src/workflow/reporter.js";
import { Runner } from "../../src/workflow/runner.js";

// The fixtures every `init` test shares: a configuration defaulted by the real
// defaultInitConfig (so it is kubeadm's defaults by construction, not a copy of them), the real
// version-table rows, InitData over a given Host, a recorder for what phases print, and the
// real Runner to run a phase tree.

/** The version every base configuration is defaulted for; edit it afterwards if a test needs. */
export const TEST_KUBERNETES_VERSION = "v1.35.0";

export interface BaseInitConfigOptions {
  /** The machine's host name, which defaulting makes the node name (default "cp-1"). */
  nodeName?: string;
  /** The detected address, which defaulting makes localAPIEndpoint.advertiseAddress. */
  advertiseAddress?: string;
}

/**
 * kubeadm's defaults for one IPv4 control plane with local etcd and no config file, as
 * defaultInitConfig gives them for a machine with the given name and address. `edit` changes
 * the result (not the input), so values are taken as written, without defaulting.
 */
export function baseInitConfig(
  o: BaseInitConfigOptions = {},
  edit?: (cfg: InitConfig) => void,
): InitConfig {
  const cfg = defaultInitConfig(
    { ignoredKinds: [] },
    {
      resolved: {
        version: TEST_KUBERNETES_VERSION,
        release: releaseFor(TEST_KUBERNETES_VERSION),
        source: "test fixture",
      },
      nodeName: o.nodeName ?? "cp-1",
      advertiseAddress: o.advertiseAddress ?? "10.0.0.4",
      generateToken: () => PLACEHOLDER_TOKEN, // instead of a random one
    },
  );
  edit?.(cfg);
  return cfg;
}

/** The version table's row for a minor (a copy: tests may change it freely). */
export function testRelease(minor = 35): Release {
  return structuredClone(releaseFor(`v1.${minor}`));
}

export interface InitDataExtras extends Partial<
  Omit<InitData, "cfg" | "release" | "host" | "now" | "ignorePreflightErrors">
> {
  /** The clock the phases read (default: the time the data was built). */
  now?: Date;
  /** As given on the command line; normalized (lower-cased) as kubeforge does. */
  ignorePreflightErrors?: string[];
}

/** InitData as `init` would build it for this configuration, release and host. */
export function testInitData(
  host: Host,
  cfg: InitConfig = baseInitConfig(),
  release: Release = testRelease(),
  extras: InitDataExtras = {},
): InitData {
  const { now = new Date(), ignorePreflightErrors, ...rest } = extras;
  return {
    cfg,
    release,
    host,
    dryRun: false,
    patchesDir: undefined,
    uploadCerts: false,
    certificateKey: undefined,
    skipTokenPrint: false,
    skipCertificateKeyPrint: false,
    proxyEnv: {},
    keys: new KeyPool(),
    api: new NodeClusterAccess(host),
    runnerFiles: new LocalHost(),
    output: () => undefined,
    ...rest,
    ignorePreflightErrors: new Set(normalizePreflightIgnores(ignorePreflightErrors)),
    now: () => now,
  };
}

/**
 * Records what is printed. It is a Logger (a phase's `ctx.log`, a preflight check list) and a
 * Reporter (the Runner's, which prefixes every line with the top-level phase: "[certs] ...").
 */
export interface RecordingLogger extends Logger, Reporter {
  /** info lines. */
  lines: string[];
  /** warn lines. */
  warnings: string[];
  /** Every line, info and warn, in the order printed. */
  output: string[];
  /** Secrets registered with mask(). */
  masked: string[];
}

export function recordingLogger(): RecordingLogger {
  const lines: string[] = [];
  const warnings: string[] = [];
  const output: string[] = [];
  const masked: string[] = [];
  return {
    lines,
    warnings,
    output,
    masked,
    info: (m) => void (lines.push(m), output.push(m)),
    warn: (m) => void (warnings.push(m), output.push(m)),
    group: (_title, fn) => fn(),
    mask: (secret) => void masked.push(secret),
  };
}

/**
 * Runs a phase tree with the real Runner, as `init phase <phase>` does, or only its child
 * `only` (`init phase <phase>/<only>`: the parent does not run). Returns the paths that ran.
 */
export async function runPhase(
  phase: Phase<InitData>,
  data: InitData,
  reporter: Reporter = recordingLogger(),
  only?: string,
): Promise<string[]> {
  const runner = new Runner([phase], reporter);
  const filter = only === undefined ? phase.name : `${phase.name}/${only}`;
  const timings = await runner.run(data, { filterPhases: [filter], dryRun: data.dryRun });
  return timings.filter((t) => t.outcome === "done").map((t) => t.path);
}

/** A LocalHost rooted in a fresh temp dir, and a cleanup function. */
export async function tempRootHost(): Promise<{
  host: LocalHost;
  root: string;
  cleanup: () => Promise<void>;
}> {
  const root = await mkdtemp(join(tmpdir(), "kubeforge-test-"));
  return {
    host: new LocalHost({ rootfs: root }),
    root,
    cleanup: () => rm(root, { recursive: true, force: true }),
  };
}
