import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import type { Command } from "commander";
import { connectNode } from "../cluster/connect.js";
import { loadImagesIntoNodes } from "../cluster/load-images.js";
import { parseImageSources } from "../config/image-sources.js";
import { TerminalReporter } from "../workflow/reporter.js";
import { readSpec } from "./up.js";

// `kubeforge load-images -f cluster.yaml IMAGE|ARCHIVE...`: images from this machine's Docker
// engine, or archives on it, imported into containerd (namespace k8s.io) on every node of a
// cluster `up` built.

export function registerLoadImages(program: Command): void {
  program
    .command("load-images")
    .description(
      "Import images into every node's containerd (namespace k8s.io): names exported from this machine's Docker engine, or .tar archives (docker save, OCI)",
    )
    .argument(
      "<image-or-archive...>",
      "image references on the Docker engine, or paths ending in .tar",
    )
    .option("-f, --file <cluster.yaml>", "the kubeforge.dev/v1alpha1 Cluster file")
    .action(async (items: string[], o: { file?: string }) => {
      const sources = parseImageSources(items, (p) => resolve(p));
      if ("problem" in sources) throw new Error(`load-images: ${sources.problem}`);
      const reporter = new TerminalReporter();
      const spec = await readSpec(o.file, reporter);
      await loadImagesIntoNodes({
        spec,
        sources,
        reporter,
        connect: (node) =>
          connectNode(spec, node, {
            readFile: (p) => readFile(p),
            env: process.env,
            log: (line) => reporter.info(line),
          }),
      }).catch((e: unknown) => {
        throw new Error(`load-images: ${(e as Error).message}`, { cause: e });
      });
    });
}
