import { createReadStream } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { run } from "../../../src/remote/host.js";
import type { DockerCluster } from "../../../src/remote/docker/cluster.js";
import type { DockerEngine } from "../../../src/remote/docker/engine.js";
import type { DockerHost } from "../../../src/remote/docker/host.js";
import { bundledCli } from "../../support/cli.js";
import { dockerTestsUnavailable } from "../../support/docker.js";
import { writeImageArchive } from "../../support/image-archive.js";
import { fileDir } from "../../support/temp-dir.js";
import { singleDockerNode } from "./support.js";

// `kubeforge load-images` into a node container on a real Docker engine: an image on the
// runner's engine (put there with a real `docker load`) leaves it as the engine's own `docker
// save` archive and is imported by the node's real containerd (running under systemd in the
// container) through `docker exec`, in the k8s.io namespace.

const unavailable = dockerTestsUnavailable();
if (unavailable && process.env.CI)
  throw new Error(`the Docker tests cannot run under CI: ${unavailable}`);

let engine: DockerEngine;
let cluster: DockerCluster;
let host: DockerHost;
let clusterPath: string;
let work: string;

beforeAll(async () => {
  if (unavailable) return;
  const name = `li${process.pid}`;
  let image: string;
  ({ engine, cluster, host, image } = await singleDockerNode(name, "nodeImage"));
  work = await fileDir("kubeforge-docker-images-");
  clusterPath = join(work, "cluster.yaml");
  await writeFile(
    clusterPath,
    [
      "apiVersion: kubeforge.dev/v1alpha1",
      "kind: Cluster",
      `name: ${name}`,
      `docker: {image: "${image}"}`,
      "nodes:",
      "- {name: node-1, role: control-plane, host: docker}",
      "",
    ].join("\n"),
  );
}, 60 * 60_000);

afterAll(async () => {
  await host?.close();
  await cluster?.remove();
}, 120_000);

describe.skipIf(unavailable)("kubeforge load-images into a docker node", () => {
  it("exports the image from the engine and imports it into the node's containerd", async () => {
    const tag = `kubeforge-test/loaded:${process.pid}`;
    const archive = await writeImageArchive(work, "loaded.tar", tag, "from the engine\n");
    await engine.loadImages(createReadStream(archive));
    const cli = await bundledCli();
    const res = await cli.kubeforge(["load-images", "-f", clusterPath, tag], {
      timeoutMs: 600_000,
    });
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toContain(`node-1: [load-images] imported docker.io/${tag}`);
    const ls = await run(host, ["ctr", "--namespace", "k8s.io", "images", "ls", "-q"]);
    expect(ls.stdout.split("\n")).toContain(`docker.io/${tag}`);
    // Complete: every blob of the image is in the node's content store.
    const cri = await run(host, ["ctr", "--namespace", "k8s.io", "images", "check"]);
    expect(cri.stdout).toMatch(
      new RegExp(`docker\\.io/${tag.replace(/[/.]/g, "\\$&")}\\s.*complete`),
    );
  }, 600_000);

  it("refuses an image the engine does not have, before any node is touched", async () => {
    const cli = await bundledCli();
    const res = await cli.kubeforge(["load-images", "-f", clusterPath, "kubeforge-test/absent:1"], {
      timeoutMs: 120_000,
    });
    expect(res.code).toBe(1);
    expect(res.stderr.trim()).toMatch(
      /^load-images: kubeforge-test\/absent:1 is not on the runner's Docker engine \(unix:\/\/\S+\); build or pull it first$/,
    );
  }, 120_000);
});
