import type { InitData } from "../init/data.js";
import type { Phase, PhaseContext } from "../../workflow/phase.js";
import type { JoinData } from "./data.js";

// A joining control plane builds what `init` builds on its first node — certificates,
// kubeconfigs, static Pods, the control-plane marks, the wait — from the cluster's configuration
// seen as this node's InitConfig (kubeadm's JoinData.InitCfg). kubeforge runs init's own phase
// code on that view, as kubeadm calls the same phase packages from join.

const views = new WeakMap<JoinData, Promise<InitData>>();

/** The InitData view of a join: one object per run, so per-run caches (the admin client) hold. */
export function initView(data: JoinData): Promise<InitData> {
  let view = views.get(data);
  if (!view) {
    view = data.clusterConfig().then(({ cfg, release }) => ({
      cfg,
      release,
      host: data.host,
      api: data.api,
      output: data.output,
      dryRun: data.dryRun,
      patchesDir: data.patchesDir,
      runnerFiles: data.runnerFiles,
      ignorePreflightErrors: data.ignorePreflightErrors,
      uploadCerts: false,
      certificateKey: data.certificateKey,
      skipTokenPrint: true,
      skipCertificateKeyPrint: true,
      proxyEnv: data.proxyEnv,
      keys: data.keys,
      now: () => data.now(),
      ensureAdminBinding: false,
    }));
    views.set(data, view);
  }
  return view;
}

/**
 * Runs an init phase (its own step, then the sub-phases named, or all) on the init view, with
 * the join phase's log.
 */
export async function runInitPhase(
  phase: Phase<InitData>,
  data: InitData,
  ctx: PhaseContext,
  only?: readonly string[],
): Promise<void> {
  if (phase.runIf && !(await phase.runIf(data))) return;
  await phase.run?.(data, ctx);
  for (const child of phase.phases ?? []) {
    if (only && !only.includes(child.name)) continue;
    await runInitPhase(child, data, ctx);
  }
}
