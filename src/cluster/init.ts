import { defaultInitConfig, isUnspecified, type DefaultingContext } from "../config/defaults.js";
import { applyInitFlags, type InitFlags } from "../config/flags.js";
import { ConfigError } from "../config/load.js";
import type { ResolvedVersion } from "../config/release.js";
import type { ConfigDocuments, InitConfig } from "../config/types.js";
import { validateInitConfig } from "../config/validate.js";
import { DEFAULT_KUBERNETES_VERSION } from "../config/versions.js";
import { syncSkippedAddons } from "../manifests/addons/skip.js";
import { proxyEnvVars } from "../manifests/static-pod.js";
import { detectAdvertiseAddress } from "../node/address.js";
import { resolveKubernetesVersion } from "../node/release-version.js";
import { validateIgnorePreflightErrors } from "../node/preflight/checks.js";
import type { InitData } from "../phases/init/data.js";
import { initPhases } from "../phases/init/index.js";
import { generateCertificateKey } from "../pki/certificate-key.js";
import { KeyPool } from "../pki/keys.js";
import { generateBootstrapToken } from "../pki/token.js";
import { LocalHost } from "../remote/local.js";
import { Runner } from "../workflow/runner.js";
import { documentsOf, runMode, type WorkflowRequest } from "./run-mode.js";

// Everything between an edge (CLI flags, action inputs) and the init workflow: configuration
// in kubeadm's order (file → flags → version → defaults → validation), then the host view and
// the phase data. Nothing on the host is written before validation has passed.

export interface InitRequest extends WorkflowRequest {
  /** Flags the user set (never a CLI library's defaults). */
  flags: InitFlags;
}

export interface PreparedInit {
  data: InitData;
  runner: Runner<InitData>;
  /** Phases to skip: `--skip-phases` or `InitConfiguration.skipPhases`. */
  skipPhases: string[];
  resolved: ResolvedVersion;
  /** Set for dry runs: where the node files are rendered. */
  dryRunDir: string | undefined;
}

/** kubeadm copies its own proxy environment into the static pods (GetProxyEnvVars). */
function proxyEnvironment(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(proxyEnvVars(env).map((v) => [v.name, v.value ?? ""]));
}

/**
 * The configuration init runs with, from the documents as given: kubeadm's defaults, its
 * validation (every problem at once), then the addons that skipped phases turn off (kubeadm's
 * manageSkippedAddons: skipped addon phases and dns/proxy.disabled agree both ways before
 * anything runs, so upload-config stores what the run did).
 */
export function initConfigOf(docs: ConfigDocuments, ctx: DefaultingContext): InitConfig {
  const cfg = defaultInitConfig(docs, ctx);
  const problems = validateInitConfig(cfg);
  if (problems.length > 0) throw new ConfigError(problems);
  const addons = syncSkippedAddons(cfg.cluster, cfg.init.skipPhases);
  if (addons.dnsDisabled) cfg.cluster.dns = { ...cfg.cluster.dns, disabled: true };
  if (addons.proxyDisabled) cfg.cluster.proxy = { ...cfg.cluster.proxy, disabled: true };
  cfg.init.skipPhases = addons.skipPhases;
  return cfg;
}

export async function prepareInit(request: InitRequest): Promise<PreparedInit> {
  const { reporter, host } = request;
  const startedAt = new Date();
  const warn = (m: string) => reporter.warn(m);

  const decoded = documentsOf(request.config);
  for (const w of decoded.warnings ?? []) warn(w);
  for (const kind of decoded.ignoredKinds)
    warn(`[config] ${kind} does not apply to init and is ignored`);
  const docs = applyInitFlags(decoded, request.flags, {
    configFileGiven: request.config !== undefined,
    warn,
  });

  const resolved = await resolveKubernetesVersion(
    docs.cluster?.kubernetesVersion ?? DEFAULT_KUBERNETES_VERSION,
    { warn, env: request.env, fetch: request.fetch ?? globalThis.fetch },
  );
  const givenAddress = docs.init?.localAPIEndpoint?.advertiseAddress;
  // Detection reads the host's routes: only when the configuration leaves the address open.
  const advertiseAddress = isUnspecified(givenAddress)
    ? await detectAdvertiseAddress(host)
    : givenAddress!;
  const cfg = initConfigOf(docs, {
    resolved,
    nodeName: await host.hostname(),
    advertiseAddress,
    generateToken: generateBootstrapToken,
    warn,
  });
  const ignorePreflightErrors = validateIgnorePreflightErrors(
    cfg.init.nodeRegistration.ignorePreflightErrors,
  );

  const dryRun = request.dryRun || cfg.init.dryRun === true;
  const { host: nodeHost, api, output, dryRunDir } = await runMode({ ...request, dryRun });

  const uploadCerts = request.flags.uploadCerts === true;
  const certificateKey =
    cfg.init.certificateKey ?? (uploadCerts ? generateCertificateKey() : undefined);
  if (certificateKey) reporter.mask(certificateKey);
  for (const t of cfg.init.bootstrapTokens) if (t.token) reporter.mask(t.token);

  const data: InitData = {
    cfg,
    release: resolved.release,
    host: nodeHost,
    api,
    output,
    dryRun,
    patchesDir: cfg.init.patches?.directory,
    runnerFiles: new LocalHost(),
    ignorePreflightErrors,
    uploadCerts,
    certificateKey,
    skipTokenPrint: request.flags.skipTokenPrint === true,
    skipCertificateKeyPrint: request.flags.skipCertificateKeyPrint === true,
    proxyEnv: proxyEnvironment(request.env),
    keys: new KeyPool(),
    // One instant for the whole run, as kubeadm's StartTimeUTC: every certificate of a run
    // carries the same dates.
    now: request.now ?? (() => startedAt),
  };
  return {
    data,
    runner: new Runner(initPhases(), reporter),
    skipPhases: cfg.init.skipPhases,
    resolved,
    dryRunDir,
  };
}
