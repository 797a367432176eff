import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { LABELS } from "../../../src/config/docker/network-plan.js";
import { defaultClusterSpec } from "../../../src/config/cluster/defaults.js";
import type { ClusterSpec } from "../../../src/config/cluster/types.js";
import { DockerCluster } from "../../../src/remote/docker/cluster.js";
import type { DockerEngine } from "../../../src/remote/docker/engine.js";
import type { DockerHost } from "../../../src/remote/docker/host.js";
import { testDockerEngine, testNodeImage } from "../../support/docker.js";
import { TEST_HOST_PREFLIGHT_IGNORES } from "../../support/preflight-ignores.js";
import { startReleaseServer, type ReleaseServer } from "../../support/release-server.js";
import { runner, type Runner } from "../up/support.js";

// Shared by the `kubeforge up` tests on docker nodes: the tests' engine and node image, the
// local release server node preparation downloads from (the test image runs the simulated
// kubelet in place of what it installs: test/support/docker.ts), and the bundled CLI run from the test process (the "runner").

export interface DockerRunner extends Runner {
  engine: DockerEngine;
  server: ReleaseServer;
  /** The environment of every CLI run: the tests' engine, the release server's CA. */
  env: Record<string, string>;
  /** `kubeforge <args>` with env. */
  cli(
    args: string[],
    timeoutMs?: number,
  ): Promise<{ code: number; stdout: string; stderr: string }>;
  /** A Cluster file of docker nodes. */
  clusterFile(o: { name: string; controlPlanes: number; workers: number; wait?: string }): string;
  /** Names of what carries the cluster's label on the engine. */
  owned(name: string): Promise<string[]>;
  close(): Promise<void>;
}

export async function dockerRunner(): Promise<DockerRunner> {
  const { engine, env: dockerEnv } = await testDockerEngine();
  const image = await testNodeImage(engine, (l) => console.info(l));
  const server = await startReleaseServer();
  const r = await runner();
  const caFile = join(r.dir, "release-ca.pem");
  await writeFile(caFile, server.ca);
  const env = { ...dockerEnv, NODE_EXTRA_CA_CERTS: caFile, HOME: r.dir };
  const { bundledCli } = await import("../../support/cli.js");
  const cli = await bundledCli();
  const ignores = `[${TEST_HOST_PREFLIGHT_IGNORES.join(", ")}]`;
  return {
    ...r,
    engine,
    server,
    env,
    // Every command in a node is an exec (about a second each on a loaded 2-core machine).
    cli: (args, timeoutMs = 2_400_000) => cli.kubeforge(args, { env, timeoutMs }),
    clusterFile: (o) => {
      const d = server.sources;
      return [
        "apiVersion: kubeforge.dev/v1alpha1",
        "kind: Cluster",
        `name: ${o.name}`,
        "kubernetesVersion: v1.35.0",
        `wait: ${o.wait ?? "6m"}`,
        `docker: {image: "${image.ref}"}`,
        "prepare:",
        "  installPackages: false",
        `  downloads: {kubernetes: "${d.kubernetes}", crictl: "${d.crictl}", cniPlugins: "${d.cniPlugins}"}`,
        "nodes:",
        ...Array.from(
          { length: o.controlPlanes },
          (_, i) => `- {name: cp-${i + 1}, role: control-plane, host: docker}`,
        ),
        ...Array.from(
          { length: o.workers },
          (_, i) => `- {name: w-${i + 1}, role: worker, host: docker}`,
        ),
        "---",
        "apiVersion: kubeadm.k8s.io/v1beta4",
        "kind: InitConfiguration",
        `nodeRegistration: {ignorePreflightErrors: ${ignores}}`,
        "---",
        "apiVersion: kubeadm.k8s.io/v1beta4",
        "kind: JoinConfiguration",
        `nodeRegistration: {ignorePreflightErrors: ${ignores}}`,
        "",
      ].join("\n");
    },
    owned: async (name) => {
      const label = [`${LABELS.cluster}=${name}`];
      return [
        ...(await engine.listContainers(label)).map((c) => `container ${c.Names[0]}`),
        ...(await engine.listVolumes(label)).map((v) => `volume ${v.Name}`),
        ...(await engine.listNetworks(label)).map((n) => `network ${n.Name}`),
      ];
    },
    close: () => server.close(),
  };
}

export interface SingleDockerNode {
  engine: DockerEngine;
  cluster: DockerCluster;
  host: DockerHost;
  spec: ClusterSpec;
  /** The image the node runs. */
  image: string;
}

/**
 * One node container, node-1 (a control plane), of a cluster of its own named `name`, on the
 * tests' engine: from kubeforge's node image as `up` makes it (`nodeImage`), or from the test
 * image, which adds the simulated kubelet (`withSimulation`).
 */
export async function singleDockerNode(
  name: string,
  image: "nodeImage" | "withSimulation",
): Promise<SingleDockerNode> {
  const { engine } = await testDockerEngine();
  const started = Date.now();
  const images = await testNodeImage(engine, (l) => console.info(l));
  console.info(`node images ready in ${Math.round((Date.now() - started) / 1000)} s`);
  const ref = image === "nodeImage" ? images.nodeImage : images.ref;
  const spec: ClusterSpec = {
    ...defaultClusterSpec(),
    name,
    nodes: [{ name: "node-1", role: "control-plane", host: "docker" }],
    docker: { image: ref, baseImage: "debian:bookworm-slim" },
  };
  const cluster = new DockerCluster(engine, spec, { log: (l) => console.info(l) });
  const host = await cluster.ensureNode(spec.nodes[0]!);
  return { engine, cluster, host, spec, image: ref };
}
