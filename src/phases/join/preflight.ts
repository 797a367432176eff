import { checkPatches } from "../init/control-plane.js";
import { requireReadyForAdditionalControlPlane } from "../../node/preflight/additional-control-plane.js";
import { initNodeChecks } from "../../node/preflight/init-checks.js";
import { joinNodeChecks } from "../../node/preflight/join-checks.js";
import { runChecks, type PreflightOutput } from "../../node/preflight/checks.js";
import {
  asksRuntimeConfig,
  connectCRI,
  containerRuntimeVersionChecks,
} from "../../node/preflight/cri.js";
import { imagePullInput, pullControlPlaneImages } from "../../node/preflight/image-pull.js";
import { isPrivilegedUserCheck } from "../../node/preflight/resource-checks.js";
import type { Phase } from "../../workflow/phase.js";
import type { JoinData } from "./data.js";

// kubeadm's cmd/phases/join/preflight.go: the root check alone, then the join node checks, built
// from the JoinConfiguration only (a node that already joined fails here, without contacting
// the cluster); then the cluster's configuration is read with the bootstrap token (discovery
// happens here); a control plane then checks the cluster can take it, runs init's checks and
// pulls the control-plane images, as init does.
// kubeadm's ContainerRuntimeVersion check is one of the join checks, worded for kubeadm's own
// version; kubeforge stands for the cluster's version, which it learns by discovery, so it runs
// that check right after discovery instead.

const unprefixed = (line: string) => line.replace(/^\[preflight\] /, "").replace(/^\t/, "");

export const joinPreflightPhase: Phase<JoinData> = {
  name: "preflight",
  short: "Run join pre-flight checks",
  run: async (data, ctx) => {
    const out: PreflightOutput = {
      info: (l) => ctx.log.info(unprefixed(l)),
      warn: (l) => ctx.log.warn(unprefixed(l)),
    };
    const warn = (l: string) => ctx.log.warn(unprefixed(l));
    ctx.log.info("Running pre-flight checks");
    await checkPatches(data);
    await runChecks([isPrivilegedUserCheck(data.host)], data.ignorePreflightErrors, out);
    const joinChecks = await joinNodeChecks(
      { join: data.cfg, host: data.host, proxyEnv: data.proxyEnv },
      { warn },
    );
    await runChecks(joinChecks, data.ignorePreflightErrors, out);

    const { cfg, release } = await data.clusterConfig();
    const nodeReg = data.cfg.join.nodeRegistration;
    const kubeadm = { version: cfg.cluster.kubernetesVersion, release };
    const runtimeChecks = containerRuntimeVersionChecks(
      data.host,
      nodeReg.criSocket,
      await connectCRI(
        data.host,
        nodeReg.criSocket,
        {},
        { runtimeConfig: asksRuntimeConfig(kubeadm) },
      ),
      kubeadm,
    );
    await runChecks(runtimeChecks, data.ignorePreflightErrors, out);
    if (data.cfg.join.controlPlane) {
      const hasCertificateKey = data.certificateKey !== undefined;
      await requireReadyForAdditionalControlPlane(
        { host: data.host, cluster: cfg.cluster, now: data.now(), warn },
        hasCertificateKey,
      );
      ctx.log.info("Running pre-flight checks before initializing the new control plane instance");
      const cpChecks = await initNodeChecks(
        { cfg, release, host: data.host, proxyEnv: data.proxyEnv },
        { secondaryControlPlane: true, downloadCerts: hasCertificateKey, warn },
      );
      await runChecks(cpChecks, data.ignorePreflightErrors, out);
      await pullControlPlaneImages(
        imagePullInput(cfg.cluster, release, data.cfg.join.nodeRegistration, data.host),
        data.ignorePreflightErrors,
        out,
        { dryRun: data.dryRun, log: (line) => ctx.log.info(line) },
      );
    }
  },
};
