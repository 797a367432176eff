// The simulated control plane the discovery tests join: certificates and kubeconfigs made by
// init's own phases, the fake API server serving them, the fake controllers (BootstrapSigner,
// tokencleaner) and init's bootstrap-token phase creating the tokens and cluster-info.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { parseKubeConfig } from "../../../src/kubeconfig/parse.js";
import type { InitData } from "../../../src/phases/init/data.js";
import { initPhases } from "../../../src/phases/init/index.js";
import { caCertHash } from "../../../src/pki/pin.js";
import type { Phase } from "../../../src/workflow/phase.js";
import {
  baseInitConfig,
  runPhase,
  tempRootHost,
  testInitData,
  testRelease,
} from "../../support/init-fixtures.js";
import { freePort } from "../../support/ports.js";
import {
  startFakeApiServer,
  startFakeControllers,
  type FakeApiServer,
  type StoredObject,
} from "../../support/sim/apiserver/index.js";

/** Signing and authentication: the BootstrapSigner signs cluster-info with it. */
export const TOKEN = "abcdef.0123456789abcdef";
/** Authentication only: never signed. */
export const UNSIGNED_TOKEN = "nosign.0123456789abcdef";
/** Expired: never signed, and the tokencleaner deletes it. */
export const EXPIRED_TOKEN = "expird.0123456789abcdef";

const CLUSTER_INFO = {
  apiVersion: "v1",
  kind: "ConfigMap",
  namespace: "kube-public",
  name: "cluster-info",
} as const;

export interface DiscoveryCluster {
  root: string;
  api: FakeApiServer;
  /** host:port a joining node asks (the API server's address). */
  endpoint: string;
  /** cluster-info's server (the cluster's controlPlaneEndpoint). */
  server: string;
  caPEM: string;
  caPin: string;
  clusterInfo(): StoredObject;
  /** Replaces cluster-info's data (the BootstrapSigner, while running, re-signs it). */
  setClusterInfoData(data: Record<string, string>): void;
  /** Waits until cluster-info's kubeconfig is signed for `tokenID`. */
  signed(tokenID: string): Promise<void>;
  stopControllers(): void;
  stop(): Promise<void>;
}

export async function startDiscoveryCluster(): Promise<DiscoveryCluster> {
  const { host, root, cleanup } = await tempRootHost();
  const port = await freePort();
  const cfg = baseInitConfig({ nodeName: "cp-1", advertiseAddress: "127.0.0.1" }, (c) => {
    c.init.localAPIEndpoint.bindPort = port;
    c.init.timeouts.kubernetesAPICall = "3s";
    const base = c.init.bootstrapTokens[0]!;
    c.init.bootstrapTokens = [
      { ...base, token: TOKEN },
      { ...base, token: UNSIGNED_TOKEN, usages: ["authentication"] },
      { ...base, token: EXPIRED_TOKEN, expires: "2020-01-01T00:00:00Z" },
    ];
  });
  const data = testInitData(host, cfg, testRelease());
  const phases = initPhases();
  const phase = (name: string) => phases.find((p) => p.name === name) as Phase<InitData>;
  await runPhase(phase("certs"), data);
  await runPhase(phase("kubeconfig"), data);
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
  await runPhase(phase("bootstrap-token"), data);

  const clusterInfo = () => {
    const cm = api.store.get(CLUSTER_INFO);
    if (!cm) throw new Error("cluster-info does not exist");
    return cm;
  };
  const dataOf = (cm: StoredObject) => (cm.data ?? {}) as Record<string, string>;
  const signed = async (tokenID: string) => {
    await api.store.waitFor(
      () => dataOf(clusterInfo())[`jws-kubeconfig-${tokenID}`] || undefined,
      10_000,
      `the signature of token ${tokenID}`,
    );
  };
  await signed(TOKEN.split(".")[0]!);
  const info = parseKubeConfig(dataOf(clusterInfo()).kubeconfig!, "cluster-info");
  const caPEM = await readFile(join(pki, "ca.crt"), "utf8");
  const stopControllers = () => {
    controllers?.stop();
    controllers = undefined;
  };
  return {
    root,
    api,
    endpoint: `127.0.0.1:${port}`,
    server: info.clusters[0]!.cluster.server,
    caPEM,
    caPin: caCertHash(caPEM),
    clusterInfo,
    setClusterInfoData: (d) => {
      api.store.update({ ...clusterInfo(), data: d });
    },
    signed,
    stopControllers,
    stop: async () => {
      stopControllers();
      await api.stop();
      await cleanup();
    },
  };
}
