import { join } from "node:path";
import type { InitConfig } from "../../src/config/types.js";
import type { InitData } from "../../src/phases/init/data.js";
import { initPhases } from "../../src/phases/init/index.js";
import type { Phase } from "../../src/workflow/phase.js";
import {
  baseInitConfig,
  runPhase,
  tempRootHost,
  testInitData,
  testRelease,
  type InitDataExtras,
} from "./init-fixtures.js";
import { freePort } from "./ports.js";
import {
  startFakeApiServer,
  startFakeControllers,
  type FakeApiServer,
} from "./sim/apiserver/index.js";

// A control plane in this test process: certificates and kubeconfigs made by init's own certs
// and kubeconfig phases, the simulated API server serving them on a free port of 127.0.0.1,
// and the simulated controllers (BootstrapSigner, CSR approval and signing...). Tests then run
// init's API phases against it, inject faults, or join it.

const phases = initPhases();

/** One of init's top-level phases, by name. */
export function initPhase(name: string): Phase<InitData> {
  return phases.find((p) => p.name === name) as Phase<InitData>;
}

export interface InProcessControlPlane {
  root: string;
  /** InitData of the node, for running init's phases against the API server. */
  data: InitData;
  api: FakeApiServer;
  /** The node's certificates folder. */
  pki: string;
  port: number;
  stopControllers: () => void;
  stop: () => Promise<void>;
}

export async function startInProcessControlPlane(
  edit?: (cfg: InitConfig) => void,
  extras: InitDataExtras = {},
): Promise<InProcessControlPlane> {
  const { host, root, cleanup } = await tempRootHost();
  const port = await freePort();
  const cfg = baseInitConfig({ nodeName: "cp-1", advertiseAddress: "127.0.0.1" }, (c) => {
    c.init.localAPIEndpoint.bindPort = port;
    c.init.timeouts.kubernetesAPICall = "3s";
    edit?.(c);
  });
  const data = testInitData(host, cfg, testRelease(), extras);
  await runPhase(initPhase("certs"), data);
  await runPhase(initPhase("kubeconfig"), data);
  const pki = join(root, "etc/kubernetes/pki");
  const api = await startFakeApiServer({
    bindAddress: "127.0.0.1",
    securePort: port,
    tlsCertFile: join(pki, "apiserver.crt"),
    tlsPrivateKeyFile: join(pki, "apiserver.key"),
    clientCAFile: join(pki, "ca.crt"),
    enableBootstrapTokenAuth: true,
  });
  let controllers: { stop(): void } | undefined = startFakeControllers(api.store, {
    clusterSigningCertFile: join(pki, "ca.crt"),
    clusterSigningKeyFile: join(pki, "ca.key"),
  });
  const stopControllers = () => {
    controllers?.stop();
    controllers = undefined;
  };
  return {
    root,
    data,
    api,
    pki,
    port,
    stopControllers,
    stop: async () => {
      stopControllers();
      await api.stop();
      await cleanup();
    },
  };
}
