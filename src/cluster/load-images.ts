import { readFile, stat } from "node:fs/promises";
import { promisify } from "node:util";
import { gunzip } from "node:zlib";
import type { ImageSource } from "../config/image-sources.js";
import type { ClusterNodeSpec, ClusterSpec } from "../config/cluster/types.js";
import { importImageArchive } from "../node/runtime/image-import.js";
import { fleet, hostReporter } from "../remote/fleet.js";
import { closeHosts, type Host } from "../remote/host.js";
import type { Reporter } from "../workflow/reporter.js";

// `load-images` (the action input and `kubeforge load-images`): images built on the runner, or
// archives on it, imported into every node's containerd — the runner itself, containers on its
// engine and VMs over SSH alike, through the Host port. Everything is checked before any node is
// touched; the archives are read once and sent to every node.

const names = (sources: readonly ImageSource[], kind: ImageSource["kind"]) =>
  sources.flatMap((s) => (s.kind !== kind ? [] : [s.kind === "image" ? s.ref : s.path]));

/**
 * Throws one sentence (without the input's or flag's name, which the caller adds) when an
 * archive is not a readable regular file or an image is not on the runner's Docker engine.
 */
export async function checkImageSources(sources: readonly ImageSource[]): Promise<void> {
  for (const path of names(sources, "archive")) {
    const s = await stat(path).catch((e: NodeJS.ErrnoException) => {
      throw new Error(
        e.code === "ENOENT" ? `${path} does not exist` : `cannot read ${path}: ${e.message}`,
        { cause: e },
      );
    });
    if (!s.isFile()) throw new Error(`${path} is not a regular file`);
  }
  const refs = names(sources, "image");
  if (refs.length === 0) return;
  const docker = await import("../remote/docker/index.js");
  const where = docker.DockerEngine.describe();
  const missing = await docker.DockerEngine.connect()
    .then((engine) => docker.missingImages(engine, refs))
    .catch((e: unknown) => {
      throw new Error(
        `the runner's Docker engine (${where}) did not answer: ${(e as Error).message}`,
        { cause: e },
      );
    });
  if (missing.length > 0) {
    throw new Error(
      `${missing.join(", ")} ${missing.length === 1 ? "is" : "are"} not on the runner's Docker engine (${where}); build or pull ${missing.length === 1 ? "it" : "them"} first`,
    );
  }
}

/**
 * The archives to send: the files (gzipped ones unpacked here: containerd's import reads only a
 * plain tar before v2), and one `docker save` of every image named.
 */
async function archivesOf(sources: readonly ImageSource[]) {
  const out: { what: string; data: Buffer }[] = [];
  for (const path of names(sources, "archive")) {
    const data = await readFile(path);
    const plain = /\.t?gz$/i.test(path)
      ? await promisify(gunzip)(data).catch((e: unknown) => {
          throw new Error(`${path} is not a gzip archive: ${(e as Error).message}`, { cause: e });
        })
      : data;
    out.push({ what: path, data: plain });
  }
  const refs = names(sources, "image");
  if (refs.length > 0) {
    const docker = await import("../remote/docker/index.js");
    const engine = await docker.DockerEngine.connect();
    out.push({ what: refs.join(", "), data: await docker.exportImages(engine, refs) });
  }
  return out;
}

export interface LoadImagesRequest {
  spec: ClusterSpec;
  sources: readonly ImageSource[];
  /** Opens a node's host (its container must run: the cluster exists). */
  connect: (node: ClusterNodeSpec) => Promise<Host>;
  reporter: Reporter;
}

/**
 * Imports every source into every node's containerd (namespace k8s.io), `concurrency` nodes at
 * once; returns each node's imported image names. Every node is tried; the error names each
 * node that failed.
 */
export async function loadImagesIntoNodes(req: LoadImagesRequest): Promise<Map<string, string[]>> {
  await checkImageSources(req.sources);
  const archives = await archivesOf(req.sources);
  const imported = new Map<string, string[]>();
  const hosts: Host[] = [];
  try {
    await fleet(
      req.spec.nodes,
      (n) => n.name,
      async (node) => {
        const host = await req.connect(node);
        hosts.push(host);
        const names: string[] = [];
        for (const a of archives) {
          const got = await importImageArchive(host, a.data, a.what);
          // ctr names what it unpacked; an archive it named nothing of is named by its source.
          names.push(...(got.length > 0 ? got : [a.what]));
        }
        imported.set(node.name, names);
        hostReporter(req.reporter, node.name).info(`[load-images] imported ${names.join(", ")}`);
      },
      { concurrency: req.spec.concurrency },
    );
  } finally {
    await closeHosts(hosts);
  }
  return imported;
}
