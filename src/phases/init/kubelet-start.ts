import {
  initKubeletFlagsEnv,
  nodeLocalCRISocket,
  renderInstanceConfig,
} from "../../manifests/kubelet.js";
import { getInitSystem } from "../../node/init-system.js";
import type { Phase } from "../../workflow/phase.js";
import {
  CONFIG_PATH,
  FLAGS_ENV_PATH,
  INSTANCE_CONFIG_PATH,
  kubeletConfigText,
  tryStartKubelet,
  tryStopKubelet,
  writeKubeletFile,
} from "../kubelet.js";
import { loadPatches } from "./control-plane.js";
import type { InitData } from "./data.js";

// The "kubelet-start" phase of `kubeforge init`: kubeadm's cmd/phases/init/kubelet.go, over the
// kubelet files and service shared with join (../kubelet.ts).

export const kubeletStartPhase: Phase<InitData> = {
  name: "kubelet-start",
  short: "Write kubelet settings and (re)start the kubelet",
  run: async (data, ctx) => {
    const { host, cfg, release } = data;
    const init = await getInitSystem(host);
    // Keep the kubelet from acting on half-written files.
    await tryStopKubelet(init, ctx.log);

    ctx.log.info(`Writing kubelet environment file with flags to file "${FLAGS_ENV_PATH}"`);
    await writeKubeletFile(
      host,
      FLAGS_ENV_PATH,
      initKubeletFlagsEnv(cfg, release, await host.hostname()),
    );

    if (nodeLocalCRISocket(cfg, release)) {
      ctx.log.info(`Writing kubelet configuration to file "${INSTANCE_CONFIG_PATH}"`);
      await writeKubeletFile(
        host,
        INSTANCE_CONFIG_PATH,
        renderInstanceConfig(cfg.init.nodeRegistration.criSocket),
      );
    }

    const patches = await loadPatches(data, ctx);
    const configText = await kubeletConfigText(data, ctx, patches, init);
    ctx.log.info(`Writing kubelet configuration to file "${CONFIG_PATH}"`);
    await writeKubeletFile(host, CONFIG_PATH, configText);

    ctx.log.info("Starting the kubelet");
    await tryStartKubelet(init, ctx.log);
  },
};
