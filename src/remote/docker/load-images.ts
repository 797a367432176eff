import { createReadStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fleet } from "../fleet.js";
import { saveImage } from "./image.js";
import type { DockerEngine } from "./engine.js";
import { containerExec } from "./exec.js";
import type { DockerHost } from "./host.js";

// Images built on the runner (`docker build -t app:dev .`) loaded into the nodes' containerd, so
// pods can run them without a registry (kind's `kind load docker-image`): one `docker save` on
// the runner, then containerd's own import on every node, in the kubelet's namespace k8s.io.

/** How long one node may take to import the archive. */
const IMPORT_TIMEOUT_MS = 10 * 60_000;

export async function loadImagesIntoNodes(
  engine: DockerEngine,
  images: readonly string[],
  hosts: readonly DockerHost[],
): Promise<void> {
  if (images.length === 0 || hosts.length === 0) return;
  for (const ref of images) {
    if (!(await engine.inspectImage(ref))) {
      throw new Error(
        `the image ${ref} is not on the runner's Docker engine; build or pull it first`,
      );
    }
  }
  const dir = await mkdtemp(join(tmpdir(), "kubeforge-images-"));
  try {
    const archive = join(dir, "images.tar");
    for (const ref of images) await saveImage(engine, ref, `${archive}.${images.indexOf(ref)}`);
    await fleet(
      hosts,
      (h) => h.name,
      async (h) => {
        for (let i = 0; i < images.length; i++) {
          const argv = ["ctr", "--namespace", "k8s.io", "images", "import", "-"];
          const r = await containerExec(engine, h.container, h.label, argv, {
            stdin: createReadStream(`${archive}.${i}`),
            timeoutMs: IMPORT_TIMEOUT_MS,
          });
          if (r.code !== 0) {
            throw new Error(
              `importing ${images[i]} failed: ${(r.stderr || r.stdout.toString()).trim().split("\n").at(-1)}`,
            );
          }
        }
      },
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
