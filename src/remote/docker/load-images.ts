import { buffer } from "node:stream/consumers";
import type { DockerEngine } from "./engine.js";

// Images built on the runner (`docker build -t app:dev .`) leave the engine as one `docker save`
// archive, which the nodes' containerd imports (node/runtime/image-import.ts), as kind's
// `kind load docker-image` does.

/** The references among `refs` the engine does not have. */
export async function missingImages(
  engine: DockerEngine,
  refs: readonly string[],
): Promise<string[]> {
  const missing: string[] = [];
  for (const ref of refs) if (!(await engine.inspectImage(ref))) missing.push(ref);
  return missing;
}

/** One `docker save` archive of the images, in memory: it goes to every node. */
export async function exportImages(engine: DockerEngine, refs: readonly string[]): Promise<Buffer> {
  return buffer(await engine.saveImages([...refs]));
}
