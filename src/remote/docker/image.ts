import { createReadStream, createWriteStream } from "node:fs";
import { pipeline } from "node:stream/promises";
import { LABELS } from "../../config/docker/network-plan.js";
import { nodeImageConfig, nodeImageRecipe, nodeImageTag } from "../../config/docker/node-image.js";
import type { DockerEngine } from "./engine.js";
import { containerExec } from "./exec.js";

// kubeforge's node image on the engine: found by its recipe's tag (Docker keeps it between
// runs on the same machine; the action also keeps it with @actions/cache), else built the way
// kind builds its node images — a container of the base image runs the recipe's script, and is
// committed with systemd's command and stop signal. No Dockerfile and no builder: the Engine
// API alone, which every engine version kubeforge meets has.

/** How long the recipe's script may take (apt-get update and install on a slow mirror). */
const BUILD_TIMEOUT_MS = 20 * 60_000;

/** The node image's reference, built from `baseImage` when the engine does not have it yet. */
export async function ensureNodeImage(
  engine: DockerEngine,
  baseImage: string,
  log: (line: string) => void,
): Promise<string> {
  const recipe = nodeImageRecipe(baseImage);
  const { repo, tag, ref } = nodeImageTag(recipe);
  if (await engine.inspectImage(ref)) return ref;
  if (!(await engine.inspectImage(baseImage))) {
    log(`[docker] pulling the base image ${baseImage}`);
    await engine.pullImage(baseImage);
  }
  log(`[docker] building the node image ${ref} from ${baseImage}`);
  const started = Date.now();
  const builder = `kubeforge-build-${tag}-${process.pid}`;
  const id = await engine.createContainer(builder, {
    Image: baseImage,
    Entrypoint: ["sleep", "infinity"],
    Cmd: [],
    Labels: { [LABELS.recipe]: tag },
    // The recipe installs packages: the machine's own network, whatever the bridge allows.
    HostConfig: { NetworkMode: "host" },
  });
  try {
    await engine.startContainer(id);
    const r = await containerExec(
      engine,
      id,
      `node image build (${builder})`,
      ["sh", "-c", recipe.script],
      {
        timeoutMs: BUILD_TIMEOUT_MS,
      },
    );
    if (r.code !== 0) {
      const tail = `${r.stderr}${r.stdout.toString()}`.trim().split("\n").slice(-5).join(" | ");
      throw new Error(
        `building the node image ${ref} from ${baseImage} failed (exit ${r.code}): ${tail}`,
      );
    }
    await engine.stopContainer(id, 1);
    await engine.commit(id, repo, tag, nodeImageConfig(recipe));
  } finally {
    await engine.removeContainer(id).catch(() => undefined);
  }
  log(`[docker] built ${ref} in ${Math.round((Date.now() - started) / 1000)}s`);
  return ref;
}

/** The node image's reference for a base image, without asking the engine. */
export function nodeImageRef(baseImage: string): string {
  return nodeImageTag(nodeImageRecipe(baseImage)).ref;
}

/** `docker save` of an image into a file on the runner (the action's cache keeps it). */
export async function saveImage(engine: DockerEngine, ref: string, file: string): Promise<void> {
  await pipeline(await engine.saveImages([ref]), createWriteStream(file, { mode: 0o600 }));
}

/** `docker load` of a file save wrote. */
export async function loadImage(engine: DockerEngine, file: string): Promise<void> {
  await engine.loadImages(createReadStream(file));
}
