import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

// A container image as `docker save` writes it (the "docker-archive" layout: manifest.json with
// RepoTags, the image config, one uncompressed layer tar), made here with the machine's `tar`:
// no registry can be reached, and containerd's real `ctr images import` must have something true
// to read. Layout per moby's image/tarexport (manifest.json: Config, RepoTags, Layers) and the
// image config of the OCI image spec (config.md: architecture, os, rootfs.diff_ids = the sha256
// of each uncompressed layer tar).

const exec = promisify(execFile);

/** Go's GOARCH for Node's process.arch (the config's `architecture`). */
function goArch(): string {
  return process.arch === "x64" ? "amd64" : process.arch;
}

const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");

/**
 * Writes `<dir>/<file>`: an image tagged `tag` whose one layer holds /hello.txt with `content`.
 * Returns the archive's path.
 */
export async function writeImageArchive(
  dir: string,
  file: string,
  tag: string,
  content: string,
): Promise<string> {
  const work = join(dir, `${file}.d`);
  const rootfs = join(work, "rootfs");
  await mkdir(rootfs, { recursive: true });
  await writeFile(join(rootfs, "hello.txt"), content);
  const layerTar = join(work, "layer.tar");
  await exec("tar", ["-C", rootfs, "--owner=0", "--group=0", "-cf", layerTar, "hello.txt"]);
  const layer = await readFile(layerTar);
  const config = Buffer.from(
    JSON.stringify({
      architecture: goArch(),
      os: "linux",
      config: { Cmd: ["/hello.txt"] },
      rootfs: { type: "layers", diff_ids: [`sha256:${sha256(layer)}`] },
    }),
  );
  const image = join(work, "image");
  const layerDir = join(image, sha256(layer));
  await mkdir(layerDir, { recursive: true });
  await writeFile(join(layerDir, "layer.tar"), layer);
  const configName = `${sha256(config)}.json`;
  await writeFile(join(image, configName), config);
  await writeFile(
    join(image, "manifest.json"),
    JSON.stringify([
      { Config: configName, RepoTags: [tag], Layers: [`${sha256(layer)}/layer.tar`] },
    ]),
  );
  const archive = join(dir, file);
  const entries = ["manifest.json", configName, `${sha256(layer)}/layer.tar`];
  await exec("tar", ["-C", image, "--owner=0", "--group=0", "-cf", archive, ...entries]);
  return archive;
}
