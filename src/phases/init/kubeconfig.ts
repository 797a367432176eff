import { featureEnabled } from "../../config/feature-gates.js";
import { certificateValidity, certDefinition } from "../../pki/certlist.js";
import { KUBERNETES_DIR } from "../../config/paths.js";
import { CA_BASE_NAME, keyFile } from "../../pki/paths.js";
import { loadCA, type LoadedCA } from "../../node/pki-store.js";
import {
  kubeConfigFileSpec,
  kubeConfigFileSpecs,
  serverURLFor,
  type KubeConfigPhaseName,
  type KubeConfigSpecOptions,
} from "../../kubeconfig/specs.js";
import {
  checkUserProvidedKubeConfig,
  ensureKubeConfigFile,
  plannedKubeConfigKeys,
} from "../../node/kubeconfig-store.js";
import type { Logger, Phase } from "../../workflow/phase.js";
import type { InitData } from "./data.js";

// `kubeadm init phase kubeconfig` (kubeadm: cmd/phases/init/kubeconfig.go): admin.conf,
// super-admin.conf, kubelet.conf, controller-manager.conf and scheduler.conf in
// /etc/kubernetes, each with a client certificate signed by the cluster CA.

const SHORTS: Record<KubeConfigPhaseName, string> = {
  admin: "Generate a kubeconfig file for the admin to use and for kubeadm itself",
  "super-admin": "Generate a kubeconfig file for the super-admin",
  kubelet:
    "Generate a kubeconfig file for the kubelet to use *only* for cluster bootstrapping purposes",
  "controller-manager": "Generate a kubeconfig file for the controller manager to use",
  scheduler: "Generate a kubeconfig file for the scheduler to use",
};

const PHASE_ORDER: KubeConfigPhaseName[] = [
  "admin",
  "super-admin",
  "kubelet",
  "controller-manager",
  "scheduler",
];

function specOptions(data: InitData): KubeConfigSpecOptions {
  return {
    kubeletLocalMode: featureEnabled(data.cfg, data.release, "ControlPlaneKubeletLocalMode"),
  };
}

async function clusterCA(data: InitData, log: Logger, now: Date): Promise<LoadedCA> {
  const certDir = data.cfg.cluster.certificatesDir;
  const ca = await loadCA({ host: data.host, certDir, log }, certDefinition("ca"), now);
  if (!ca) {
    throw new Error(
      `the CA files do not exist in ${certDir}; run "kubeforge init phase certs ca" to generate them`,
    );
  }
  return ca;
}

function fileSubPhase(name: KubeConfigPhaseName): Phase<InitData> {
  return {
    name,
    short: SHORTS[name],
    run: async (data, ctx) => {
      const now = data.now();
      const cfg = data.cfg;
      const spec = kubeConfigFileSpec(name, cfg.init.nodeRegistration.name, specOptions(data));
      const server = serverURLFor(spec, cfg);
      const ca = await clusterCA(data, ctx.log, now);
      const target = { host: data.host, dir: KUBERNETES_DIR, log: ctx.log, now };
      if (!ca.key) {
        await checkUserProvidedKubeConfig(target, spec, server, ca);
        ctx.log.info(`External CA mode: Using user provided ${spec.fileName}`);
        return;
      }
      await ensureKubeConfigFile(
        {
          ...target,
          clusterName: cfg.cluster.clusterName,
          keys: data.keys,
          algorithm: cfg.cluster.encryptionAlgorithm,
          clientCertNotAfter: certificateValidity(cfg, "leaf", now).notAfter,
          preferences: data.release.behaviour.kubeconfigPreferences,
        },
        spec,
        server,
        { ...ca, key: ca.key },
      );
    },
  };
}

export const kubeconfigPhase: Phase<InitData> = {
  name: "kubeconfig",
  short:
    "Generate all kubeconfig files necessary to establish the control plane and the admin kubeconfig file",
  run: async (data, ctx) => {
    ctx.log.info(`Using kubeconfig folder "${KUBERNETES_DIR}"`);
    const certDir = data.cfg.cluster.certificatesDir;
    // In external CA mode nothing is signed, so no key is needed.
    if (!(await data.host.exists(keyFile(certDir, CA_BASE_NAME)))) return;
    const specs = kubeConfigFileSpecs(data.cfg.init.nodeRegistration.name, specOptions(data));
    const count = await plannedKubeConfigKeys(data.host, KUBERNETES_DIR, specs);
    if (count > 0) data.keys.prefetch(data.cfg.cluster.encryptionAlgorithm, count);
  },
  phases: PHASE_ORDER.map(fileSubPhase),
};
