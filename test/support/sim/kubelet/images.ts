import { createHash } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";

// SIMULATION (test double). The simulated container runtime's image store, as far as `crictl
// pull` and `crictl inspecti` (crictl.ts) need it: which references have been pulled. No bytes
// are fetched. One file per image under the runtime's folder, written atomically, so concurrent
// crictl processes (kubeforge pulls several images at once) never lose each other's writes.

export interface SimImage {
  /** "sha256:<64 hex>", derived from the reference (a real ID is the config's digest). */
  id: string;
  /** The normalised reference, e.g. "registry.k8s.io/pause:3.10.1". */
  repoTags: string[];
  repoDigests: string[];
  /** Bytes, as a string (protojson's uint64). */
  size: string;
  pinned: boolean;
}

export interface ImageStore {
  get(reference: string): Promise<SimImage | undefined>;
  add(reference: string): Promise<SimImage>;
}

/**
 * containerd's CRI plugin normalises a reference the Docker way (distribution/reference
 * ParseNormalizedNamed): no registry → docker.io, a docker.io name without a path → library/,
 * no tag or digest → :latest.
 */
export function normalizeReference(reference: string): string {
  let ref = reference.trim();
  const slash = ref.indexOf("/");
  const first = slash < 0 ? "" : ref.slice(0, slash);
  const hasRegistry = first !== "" && (/[.:]/.test(first) || first === "localhost");
  if (!hasRegistry) ref = `docker.io/${ref}`;
  if (/^docker\.io\/[^/]+$/.test(ref)) ref = ref.replace(/^docker\.io\//, "docker.io/library/");
  const name = ref.split("@")[0]!;
  const lastPart = name.slice(name.lastIndexOf("/") + 1);
  if (!ref.includes("@") && !lastPart.includes(":")) ref = `${ref}:latest`;
  return ref;
}

function imageOf(reference: string): SimImage {
  const ref = normalizeReference(reference);
  const id = createHash("sha256").update(ref).digest("hex");
  const byDigest = ref.includes("@");
  return {
    id: `sha256:${id}`,
    repoTags: byDigest ? [] : [ref],
    repoDigests: [`${ref.split(/[:@](?=[^/]*$)/)[0]}@sha256:${id}`],
    size: String(1_000_000 + (parseInt(id.slice(0, 5), 16) % 1_000_000)),
    pinned: false,
  };
}

/**
 * The runtime's own store, in its folder: what the crictl processes and the runtime daemon
 * answering the crictl shim both read and write.
 */
export const runtimeImageStore = (runtimeDir: string): ImageStore =>
  fileImageStore(join(runtimeDir, "images"));

/** The store in `<dir>/<sha256 of the reference>.json`. */
export function fileImageStore(dir: string): ImageStore {
  const fileOf = (reference: string) =>
    join(dir, `${createHash("sha256").update(normalizeReference(reference)).digest("hex")}.json`);
  return {
    async get(reference) {
      const text = await readFile(fileOf(reference), "utf8").catch(() => undefined);
      return text === undefined ? undefined : (JSON.parse(text) as SimImage);
    },
    async add(reference) {
      const image = imageOf(reference);
      await mkdir(dir, { recursive: true });
      const file = fileOf(reference);
      const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
      await writeFile(tmp, JSON.stringify(image));
      await rename(tmp, file);
      return image;
    },
  };
}

/** A store in memory (unit tests of crictl.ts). */
export function memoryImageStore(): ImageStore & { references(): string[] } {
  const images = new Map<string, SimImage>();
  return {
    get: (reference) => Promise.resolve(images.get(normalizeReference(reference))),
    add: (reference) => {
      const image = imageOf(reference);
      images.set(normalizeReference(reference), image);
      return Promise.resolve(image);
    },
    references: () => [...images.keys()],
  };
}
