import { caPinsOf } from "../../kubeconfig/ca-pins.js";
import { parseKubeConfig, currentEntries } from "../../kubeconfig/parse.js";
import { showJoinCommandText } from "../../manifests/join-command.js";
import type { Phase } from "../../workflow/phase.js";
import { ADMIN_KUBECONFIG_PATH } from "./clients.js";
import type { InitData } from "./data.js";

// kubeadm's cmd/phases/init/showjoincommand.go: the message that ends `init`, with a worker and
// (given a control-plane endpoint) a control-plane join command per bootstrap token, pinned to
// every CA in admin.conf. It is the command's result, so it goes to the output, not the log.

export const showJoinCommandPhase: Phase<InitData> = {
  name: "show-join-command",
  short: "Show the join command for control-plane and worker node",
  // kubeadm lists bootstrap-token and upload-certs as its Dependencies without enforcing them:
  // `kubeadm init --skip-phases bootstrap-token` still prints the join command. Declaring them
  // here would refuse that run (workflow/phase.ts), so they are left out.
  run: async (data) => {
    const text = await data.host.readFile(ADMIN_KUBECONFIG_PATH);
    const config = parseKubeConfig(text, ADMIN_KUBECONFIG_PATH);
    const { cluster } = currentEntries(config, ADMIN_KUBECONFIG_PATH);
    const caCertHashes = caPinsOf(config, ADMIN_KUBECONFIG_PATH);
    data.output(
      showJoinCommandText({
        program: "kubeforge",
        kubeconfigPath: ADMIN_KUBECONFIG_PATH,
        server: cluster.server,
        caCertHashes,
        tokens: data.cfg.init.bootstrapTokens.map((t) => t.token ?? ""),
        controlPlaneEndpoint: data.cfg.cluster.controlPlaneEndpoint,
        uploadCerts: data.uploadCerts,
        certificateKey: data.certificateKey,
        skipTokenPrint: data.skipTokenPrint,
        skipCertificateKeyPrint: data.skipCertificateKeyPrint,
      }),
    );
  },
};
