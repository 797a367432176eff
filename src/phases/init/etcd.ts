import { DEFAULT_ETCD_DATA_DIR, MANIFESTS_DIR } from "../../config/paths.js";
import { initEtcdPod } from "../../manifests/etcd.js";
import type { Phase } from "../../workflow/phase.js";
import { writeStaticPod } from "./control-plane.js";
import type { InitData } from "./data.js";

// The "etcd" phase of `kubeforge init`: kubeadm's cmd/phases/init/etcd.go. With external etcd
// there is nothing to do and the sub-phase is skipped.

/** kubeadm: util/etcd CreateDataDirectory creates the data dir 0700. */
export const ETCD_DATA_DIR_MODE = 0o700;

export const etcdPhase: Phase<InitData> = {
  name: "etcd",
  short: "Generate static Pod manifest file for local etcd",
  phases: [
    {
      name: "local",
      short: "Generate the static Pod manifest file for a local, single-node local etcd instance",
      runIf: (data) => data.cfg.cluster.etcd.external === undefined,
      run: async (data, ctx) => {
        const dataDir = data.cfg.cluster.etcd.local?.dataDir ?? DEFAULT_ETCD_DATA_DIR;
        await data.host.mkdirp(dataDir, ETCD_DATA_DIR_MODE);
        ctx.log.info(`Creating static Pod manifest for local etcd in "${MANIFESTS_DIR}"`);
        await writeStaticPod(data, "etcd", initEtcdPod(data.cfg, data.release), ctx);
      },
    },
  ],
};
