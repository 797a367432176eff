import { parseGoDuration } from "../../config/duration.js";
import type { StackedEtcdTimeouts } from "../../etcd/access.js";
import { DEFAULT_ETCD_DATA_DIR, MANIFESTS_DIR } from "../../config/paths.js";
import { isNotFound } from "../../kube/errors.js";
import { etcdPeerURL, etcdPod } from "../../manifests/etcd.js";
import {
  KUBEADM_CERTS_SECRET,
  certsToTransfer,
  decodeKubeadmCerts,
  kubeadmCertFiles,
} from "../../manifests/upload-certs.js";
import { certFile, keyFile } from "../../pki/paths.js";
import type { Phase, PhaseContext } from "../../workflow/phase.js";
import { certsPhase } from "../init/certs.js";
import { adminClient } from "../init/clients.js";
import { controlPlanePhase, writeStaticPod } from "../init/control-plane.js";
import { ETCD_DATA_DIR_MODE } from "../init/etcd.js";
import { kubeconfigPhase } from "../init/kubeconfig.js";
import { markControlPlanePhase } from "../init/mark-control-plane.js";
import { waitForStaticPodComponents } from "../init/wait-control-plane.js";
import type { JoinData } from "./data.js";
import { initView, runInitPhase } from "./init-view.js";
import { kubeletLocalMode } from "./kubelet-wait-bootstrap.js";

// The control-plane phases of kubeadm's join (cmd/phases/join/controlplaneprepare.go,
// checketcd.go, etcd.go, controlplanejoin.go, waitcontrolplane.go). Each does nothing on a
// worker join.

const isControlPlane = (data: JoinData) => data.cfg.join.controlPlane !== undefined;

/**
 * download-certs: the kubeadm-certs Secret read with the bootstrap token and decrypted with the
 * certificate key. Every value is decrypted before any file is written: a wrong key writes
 * nothing.
 */
const downloadCertsPhase: Phase<JoinData> = {
  name: "download-certs",
  short: "Download certificates shared among control-plane nodes from the kubeadm-certs Secret",
  runIf: (data) => data.certificateKey !== undefined,
  run: async (data, ctx) => {
    const { cfg } = await data.clusterConfig();
    const client = await data.bootstrapClient();
    ctx.log.info(
      `[download-certs] Downloading the certificates in Secret "${KUBEADM_CERTS_SECRET}" in the "kube-system" Namespace`,
    );
    const secret = await client
      .get({
        apiVersion: "v1",
        kind: "Secret",
        name: KUBEADM_CERTS_SECRET,
        namespace: "kube-system",
      })
      .catch((e: unknown) => {
        if (isNotFound(e)) {
          throw new Error(
            `Secret "${KUBEADM_CERTS_SECRET}" was not found in the "kube-system" Namespace. This Secret might have expired. Please, run \`kubeforge init phase upload-certs --upload-certs\` on a control plane to generate a new one`,
            { cause: e },
          );
        }
        throw e;
      });
    let decoded: Map<string, Buffer>;
    try {
      decoded = decodeKubeadmCerts(secret, data.certificateKey!);
    } catch (e) {
      throw new Error(
        `error decoding the ${KUBEADM_CERTS_SECRET} Secret with the certificate key (is --certificate-key the one init printed?): ${(e as Error).message}`,
        { cause: e },
      );
    }
    ctx.log.info(
      `[download-certs] Saving the certificates to the folder: "${cfg.cluster.certificatesDir}"`,
    );
    for (const file of kubeadmCertFiles(decoded, certsToTransfer(cfg.cluster))) {
      await data.host.writeFile(file.path, file.data, file.mode);
    }
  },
};

export const controlPlanePreparePhase: Phase<JoinData> = {
  name: "control-plane-prepare",
  short: "Prepare the machine for serving a control plane",
  runIf: isControlPlane,
  phases: [
    downloadCertsPhase,
    {
      name: "certs",
      short: "Generate the certificates for the new control plane components",
      run: async (data, ctx) => runInitPhase(certsPhase, await initView(data), ctx),
    },
    {
      name: "kubeconfig",
      short: "Generate the kubeconfig for the new control plane components",
      run: async (data, ctx) =>
        runInitPhase(kubeconfigPhase, await initView(data), ctx, [
          "admin",
          "controller-manager",
          "scheduler",
        ]),
    },
    {
      name: "control-plane",
      short: "Generate the manifests for the new control plane components",
      run: async (data, ctx) => runInitPhase(controlPlanePhase, await initView(data), ctx),
    },
  ],
};

async function etcdCredentials(data: JoinData) {
  const { cfg } = await data.clusterConfig();
  const dir = cfg.cluster.certificatesDir;
  const read = async (path: string) => (await data.host.readFile(path)).toString("utf8");
  return {
    ca: await read(certFile(dir, "etcd/ca")),
    cert: await read(certFile(dir, "etcd/healthcheck-client")),
    key: await read(keyFile(dir, "etcd/healthcheck-client")),
  };
}

/** kubeadm's etcd client follows the join's active timeouts (JoinConfiguration.timeouts). */
function etcdTimeouts(data: JoinData): StackedEtcdTimeouts {
  const { timeouts } = data.cfg.join;
  return {
    kubernetesAPICallMs: parseGoDuration(timeouts.kubernetesAPICall),
    etcdAPICallMs: parseGoDuration(timeouts.etcdAPICall),
  };
}

export const checkEtcdPhase: Phase<JoinData> = {
  name: "check-etcd",
  short: "Check that the etcd cluster is healthy",
  hidden: true,
  runIf: isControlPlane,
  run: async (data, ctx) => {
    const view = await initView(data);
    if (view.cfg.cluster.etcd.external) return;
    ctx.log.info("[check-etcd] Checking that the etcd cluster is healthy");
    await data.etcd.checkClusterHealth(
      await adminClient(view),
      await etcdCredentials(data),
      etcdTimeouts(data),
    );
  },
};

/** Adds this node to the stacked etcd cluster as a learner, writes etcd.yaml, promotes it. */
async function joinEtcd(data: JoinData, ctx: PhaseContext): Promise<void> {
  const view = await initView(data);
  const { cfg, release } = view;
  if (cfg.cluster.etcd.external) return;
  const dataDir = cfg.cluster.etcd.local?.dataDir ?? DEFAULT_ETCD_DATA_DIR;
  await data.host.mkdirp(dataDir, ETCD_DATA_DIR_MODE);
  const nodeName = cfg.init.nodeRegistration.name;
  await data.etcd.joinMember(
    await adminClient(view),
    await etcdCredentials(data),
    etcdTimeouts(data),
    {
      nodeName,
      peerURL: etcdPeerURL(cfg.init.localAPIEndpoint.advertiseAddress),
      log: (l) => ctx.log.info(l),
      writeManifest: async (members) => {
        ctx.log.info(`Creating static Pod manifest for "etcd" in "${MANIFESTS_DIR}"`);
        const pod = etcdPod(
          {
            cluster: cfg.cluster,
            endpoint: cfg.init.localAPIEndpoint,
            nodeName,
            timeouts: cfg.init.timeouts,
            initialCluster: members,
          },
          release,
        );
        await writeStaticPod(view, "etcd", pod, ctx);
      },
    },
  );
}

/**
 * etcd-join runs the etcd join with ControlPlaneKubeletLocalMode (locked on from v1.35); with
 * the gate off (v1.33, v1.34) kubeadm does it in control-plane-join/etcd instead, after the
 * kubelet's TLS bootstrap.
 */
export const etcdJoinPhase: Phase<JoinData> = {
  name: "etcd-join",
  short: "Join etcd for control plane nodes",
  runIf: isControlPlane,
  run: async (data, ctx) => {
    if (await kubeletLocalMode(data)) await joinEtcd(data, ctx);
  },
};

export const controlPlaneJoinPhase: Phase<JoinData> = {
  name: "control-plane-join",
  short: "Join a machine as a control plane instance",
  runIf: isControlPlane,
  phases: [
    // kubeadm v1.35 keeps this sub-phase, deprecated and hidden (kubernetes/kubernetes#134106),
    // so scripts that skip it by name still work; it joins etcd only with the gate off.
    {
      name: "etcd",
      short: "[DEPRECATED] Add a new local etcd member (replaced by etcd-join)",
      hidden: true,
      run: async (data, ctx) => {
        if (!(await kubeletLocalMode(data))) await joinEtcd(data, ctx);
      },
    },
    {
      name: "mark-control-plane",
      short: "Mark a node as a control-plane",
      run: async (data, ctx) => runInitPhase(markControlPlanePhase, await initView(data), ctx),
    },
  ],
};

/**
 * kubeadm's join waitcontrolplane.go: only the components' health endpoints (the kubelet was
 * waited for in kubelet-wait-bootstrap), within the join's controlPlaneComponentHealthCheck.
 */
export const joinWaitControlPlanePhase: Phase<JoinData> = {
  name: "wait-control-plane",
  short: "Wait for the control plane to start",
  runIf: isControlPlane,
  run: async (data, ctx) =>
    waitForStaticPodComponents(await initView(data), (line) => ctx.log.info(line)),
};
