import {
  COREDNS_NAME,
  KUBE_DNS_LABEL_SELECTOR,
  coreDNSConfigMapAction,
  coreDNSEnabled,
  coreDNSObjects,
  existingCoreDNSReplicas,
} from "../../manifests/addons/coredns.js";
import { kubeProxyEnabled, kubeProxyObjects } from "../../manifests/addons/kube-proxy.js";
import {
  createOrUpdate,
  createOrUpdateAll,
  createOrUpdateService,
  getIfExists,
} from "../../kube/idempotency.js";
import { poll } from "../../kube/poll.js";
import type { ObjectRef } from "../../kube/types.js";
import { allOrFirstError } from "../../remote/fleet.js";
import type { Phase, PhaseContext } from "../../workflow/phase.js";
import { adminClient, apiCallOptions } from "./clients.js";
import { loadPatches } from "./control-plane.js";
import type { InitData } from "./data.js";

// kubeadm's cmd/phases/init/addons.go over phases/addons/dns (EnsureDNSAddon) and
// phases/addons/proxy (EnsureProxyAddon): every object created or updated, in kubeadm's order.

const COREDNS_CONFIGMAP: ObjectRef = {
  apiVersion: "v1",
  kind: "ConfigMap",
  namespace: "kube-system",
  name: COREDNS_NAME,
};

async function ensureCoreDNS(data: InitData, ctx: PhaseContext): Promise<void> {
  const client = await adminClient(data);
  const opts = apiCallOptions(data);
  // kubeadm deployedDNSReplicas: a re-apply keeps the replica count the cluster runs. Both
  // reads are asked at once; the writes go in kubeadm's order where it matters: the Corefile
  // before the Deployment that mounts it (its RBAC beside it), the Service beside the Deployment.
  const [deployments, existing] = await allOrFirstError([
    poll(
      () =>
        client.list("apps/v1", "Deployment", {
          namespace: "kube-system",
          labelSelector: KUBE_DNS_LABEL_SELECTOR,
        }),
      { ...opts, what: `the Deployments labelled ${KUBE_DNS_LABEL_SELECTOR}` },
    ),
    getIfExists(client, COREDNS_CONFIGMAP, opts),
  ]);
  const objects = coreDNSObjects(data.cfg, data.release, {
    replicas: existingCoreDNSReplicas(deployments),
    patches: await loadPatches(data, ctx),
    log: (l) => ctx.log.info(l),
  });

  const action = coreDNSConfigMapAction(existing);
  if (action === "retain") {
    ctx.log.warn(
      `the ConfigMap kube-system/${COREDNS_NAME} holds a Corefile kubeadm did not generate: it is kept as it is (kubeforge does not migrate Corefiles)`,
    );
  }
  await allOrFirstError([
    action === "retain" ? Promise.resolve() : createOrUpdate(client, objects.configMap, opts),
    createOrUpdateAll(
      client,
      [objects.clusterRole, objects.clusterRoleBinding, objects.serviceAccount],
      opts,
    ),
  ]);
  await allOrFirstError([
    createOrUpdate(client, objects.deployment, opts),
    createOrUpdateService(client, objects.service, opts),
  ]);
  ctx.log.info("[addons] Applied essential addon: CoreDNS");
}

async function ensureKubeProxy(data: InitData, ctx: PhaseContext): Promise<void> {
  const client = await adminClient(data);
  const opts = apiCallOptions(data);
  // Its configuration first, as kubeadm; the DaemonSet and its RBAC then at once.
  const [configMap, ...rest] = kubeProxyObjects(data.cfg, data.release, data.proxyEnv).inOrder;
  await createOrUpdate(client, configMap!, opts);
  await createOrUpdateAll(client, rest, opts);
  ctx.log.info("[addons] Applied essential addon: kube-proxy");
}

export const addonPhase: Phase<InitData> = {
  name: "addon",
  short: "Install required addons for passing conformance tests",
  phases: [
    {
      name: "coredns",
      short: "Install the CoreDNS addon to a Kubernetes cluster",
      runIf: (data) => coreDNSEnabled(data.cfg),
      run: ensureCoreDNS,
    },
    {
      name: "kube-proxy",
      short: "Install the kube-proxy addon to a Kubernetes cluster",
      runIf: (data) => kubeProxyEnabled(data.cfg),
      run: ensureKubeProxy,
    },
  ],
};
