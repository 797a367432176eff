import type { ClusterNodeSpec, ClusterSpec } from "../config/cluster/types.js";
import type { ImageSource } from "../config/image-sources.js";
import { checkImageSources, loadImagesIntoNodes } from "../cluster/load-images.js";
import type { Host } from "../remote/host.js";
import type { Reporter } from "../workflow/reporter.js";

// The load-images input: checked before `up` changes anything (the archives are files, the
// images are on the runner's engine), imported into every node once the cluster is up.

const named = (e: unknown) => new Error(`input load-images: ${(e as Error).message}`, { cause: e });

export async function checkInputImages(sources: readonly ImageSource[] | undefined): Promise<void> {
  if (sources) await checkImageSources(sources).catch((e: unknown) => Promise.reject(named(e)));
}

export async function loadInputImages(
  sources: readonly ImageSource[] | undefined,
  spec: ClusterSpec,
  connect: (node: ClusterNodeSpec) => Promise<Host>,
  reporter: Reporter,
): Promise<void> {
  if (!sources) return;
  await reporter.group("load images", () =>
    loadImagesIntoNodes({ spec, sources, connect, reporter }).catch((e: unknown) =>
      Promise.reject(named(e)),
    ),
  );
}
