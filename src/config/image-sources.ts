import { isImageReference } from "./image-reference.js";
import { quoteValue } from "./values.js";

// What `load-images` (the action input, the CLI command) takes: image names to export from the
// runner's Docker engine, or `docker save` / OCI archives on the runner. Pure: the caller
// resolves paths and checks that the files and images exist.

/** An archive's name; an image reference cannot end so (".tar.gz" could, and is a path here). */
const ARCHIVE = /\.(tar|tar\.gz|tgz)$/i;

export type ImageSource = { kind: "image"; ref: string } | { kind: "archive"; path: string };

/** Items of a list written in one value: separated by commas or new lines. */
export function splitImageList(text: string): string[] {
  return text
    .split(/[,\n]/)
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

/**
 * Each item an archive (a path ending in .tar, .tar.gz or .tgz: what `docker save -o` and `ctr
 * images export` write, gzipped or not) or an image reference; `resolvePath` makes an archive's path absolute. A problem is
 * one phrase naming the item.
 */
export function parseImageSources(
  items: readonly string[],
  resolvePath: (path: string) => string,
): ImageSource[] | { problem: string } {
  const out: ImageSource[] = [];
  for (const item of items) {
    if (ARCHIVE.test(item)) {
      out.push({ kind: "archive", path: resolvePath(item) });
    } else if (isImageReference(item)) {
      out.push({ kind: "image", ref: item });
    } else {
      return {
        problem: `${quoteValue(item)} is neither an image reference (such as app:dev or ghcr.io/acme/app:1) nor an archive path ending in .tar, .tar.gz or .tgz`,
      };
    }
  }
  const seen = new Set<string>();
  for (const s of out) {
    const key = s.kind === "image" ? s.ref : s.path;
    if (seen.has(key)) return { problem: `${JSON.stringify(key)} is listed twice` };
    seen.add(key);
  }
  return out;
}
