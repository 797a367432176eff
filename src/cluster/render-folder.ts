import { readdir } from "node:fs/promises";

/**
 * Checks that a folder a dry run renders a node's files into is absent or empty: nothing of
 * anyone else's is overwritten, and no file of an earlier rendering is reused as this one's.
 * `what` names the rendering ("the init"); the error names the folder.
 */
export async function requireEmptyRenderFolder(dir: string, what: string): Promise<void> {
  const present = await readdir(dir).catch((e: NodeJS.ErrnoException) => {
    if (e.code === "ENOENT") return [];
    throw new Error(`cannot render ${what} into ${dir}: ${e.message}`, { cause: e });
  });
  if (present.length > 0) {
    throw new Error(
      `cannot render ${what} into ${dir}: the folder is not empty; give an empty or new folder`,
    );
  }
}
