// The simulated control plane the discovery tests join: certificates and kubeconfigs made by
// init's own phases, the fake API server serving them, the fake controllers (BootstrapSigner,
// tokencleaner) and init's bootstrap-token phase creating the tokens and cluster-info.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { parseKubeConfig } from "../../../src/kubeconfig/parse.js";
import { caCertHash } from "../../../src/pki/pin.js";
import { runPhase } from "../../support/init-fixtures.js";
import type { FakeApiServer, StoredObject } from "../../support/sim/apiserver/index.js";
import { initPhase, startInProcessControlPlane } from "../../support/sim-control-plane.js";

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
  const cp = await startInProcessControlPlane((c) => {
    const base = c.init.bootstrapTokens[0]!;
    c.init.bootstrapTokens = [
      { ...base, token: TOKEN },
      { ...base, token: UNSIGNED_TOKEN, usages: ["authentication"] },
      { ...base, token: EXPIRED_TOKEN, expires: "2020-01-01T00:00:00Z" },
    ];
  });
  const { root, api, data, pki, port, stopControllers } = cp;
  await runPhase(initPhase("bootstrap-token"), data);

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
    stop: cp.stop,
  };
}
