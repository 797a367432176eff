import type { InitData } from "../init/data.js";
import type { UpgradeData } from "./data.js";

// `upgrade` re-applies what `init` created — the kubeadm-config and kubelet-config ConfigMaps,
// the bootstrap-token RBAC, CoreDNS and kube-proxy — with init's own phase code, run over the
// upgrade's configuration seen as InitData (kubeadm calls the same phase packages from its
// upgrade phases). Every kubeconfig path init's phases ask for resolves to the upgrade's client
// (--kubeconfig), which `prepare` puts behind data.cluster.

const views = new WeakMap<UpgradeData, InitData>();

export function upgradeInitView(data: UpgradeData): InitData {
  let view = views.get(data);
  if (!view) {
    view = {
      cfg: data.cfg,
      release: data.release,
      host: data.host,
      api: data.cluster,
      output: data.output,
      dryRun: data.dryRun,
      patchesDir: data.patchesDir,
      runnerFiles: data.runnerFiles,
      ignorePreflightErrors: data.ignorePreflightErrors,
      uploadCerts: false,
      certificateKey: undefined,
      skipTokenPrint: true,
      skipCertificateKeyPrint: true,
      proxyEnv: data.proxyEnv,
      keys: data.keys,
      now: () => data.now(),
      // The cluster exists: admin.conf (or --kubeconfig) is used as it is, as kubeadm upgrade does.
      ensureAdminBinding: false,
      // Upgrade re-applies what init made: updates go first. A dry run's lines stay kubeadm's
      // ("Would perform action CREATE"), its client answering every create.
      objectsExist: !data.dryRun,
    };
    views.set(data, view);
  }
  return view;
}
