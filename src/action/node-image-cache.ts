import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { ClusterSpec } from "../config/cluster/types.js";
import { hasDockerNodes } from "../cluster/docker-nodes.js";
import { cacheService } from "./cache-service.js";

// kubeforge's node image kept between runs with GitHub's cache service: a hosted runner starts
// with an empty Docker engine, and building the image (apt in a container) takes minutes. The
// main step restores the `docker save` archive of the image its recipe names and loads it before
// `up`; the post step of a good run that had to build it saves it. The image's tag is its
// recipe's digest, so a changed recipe is a new key. A user's own `docker.image`, a Cluster
// without docker nodes, or a cache outage: nothing happens here.

/** Bumped when the cached layout changes. */
const LAYOUT = "v1";

export type NodeImageCacheState = "none" | "present" | "restored" | "miss";

/** The cache key of a node image reference ("kubeforge/node:<digest>"). */
export function nodeImageCacheKey(ref: string): string {
  return `kubeforge-node-image-${LAYOUT}-${process.platform}-${process.arch}-${ref.split(":").at(-1)}`;
}

function archiveDir(env: NodeJS.ProcessEnv): string | undefined {
  return env.RUNNER_TEMP ? join(env.RUNNER_TEMP, "kubeforge-node-image") : undefined;
}

async function imageRef(spec: ClusterSpec): Promise<string | undefined> {
  if (!hasDockerNodes(spec) || spec.docker?.image !== undefined) return undefined;
  const docker = await import("../remote/docker/index.js");
  return docker.nodeImageRef(spec.docker?.baseImage ?? "debian:bookworm-slim");
}

/** Before `up`: the node image on the engine, from the cache when it is not there yet. */
export async function restoreNodeImage(
  spec: ClusterSpec,
  env: NodeJS.ProcessEnv,
  log: (line: string) => void,
): Promise<NodeImageCacheState> {
  const ref = await imageRef(spec);
  const dir = archiveDir(env);
  if (!ref || !dir) return "none";
  try {
    const docker = await import("../remote/docker/index.js");
    const engine = await docker.DockerEngine.connect();
    if (await engine.inspectImage(ref)) return "present";
    const cache = await cacheService(env);
    if (!cache) return "miss";
    const key = nodeImageCacheKey(ref);
    if (!(await cache.restoreCache([dir], key))) {
      log(`[cache] no cached node image ${ref}: up builds it`);
      return "miss";
    }
    await docker.loadImage(engine, join(dir, "image.tar"));
    log(`[cache] node image ${ref} restored (${key})`);
    return "restored";
  } catch (e) {
    // The image is built instead.
    log(`[cache] could not restore the node image: ${(e as Error).message}`);
    return "miss";
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** After a good run that built the node image: saved for the next run. */
export async function saveNodeImage(
  spec: ClusterSpec,
  state: string,
  env: NodeJS.ProcessEnv,
  log: (line: string) => void,
): Promise<void> {
  const ref = await imageRef(spec);
  const dir = archiveDir(env);
  if (state !== "miss" || !ref || !dir) return;
  const cache = await cacheService(env);
  if (!cache) return;
  try {
    const docker = await import("../remote/docker/index.js");
    const engine = await docker.DockerEngine.connect();
    if (!(await engine.inspectImage(ref))) return;
    await mkdir(dir, { recursive: true });
    await docker.saveImage(engine, ref, join(dir, "image.tar"));
    await cache.saveCache([dir], nodeImageCacheKey(ref));
    log(`[cache] node image ${ref} saved`);
  } catch (e) {
    log(`[cache] could not save the node image: ${(e as Error).message}`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
