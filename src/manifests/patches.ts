import fastJsonPatch from "fast-json-patch";
import type { Operation } from "fast-json-patch";
import { posix } from "node:path";
import { parseYAMLDocuments } from "../config/yaml.js";
import { describeDocument, isMapping } from "../config/values.js";
import { compareBytes } from "./static-pod.js";
import {
  DEPLOYMENT_SCHEMA,
  KUBELET_CONFIGURATION_SCHEMA,
  POD_SCHEMA,
  strategicMergePatch,
  type JSONMap,
  type JSONValue,
  type TypeSchema,
} from "./strategic-merge.js";

// kubeadm's --patches: a directory of files named "target[suffix][+patchtype].{json,yaml}",
// each holding one or more patches for one target. kubeadm: util/patches/patches.go.

export const PATCH_TARGETS = [
  "etcd",
  "kube-apiserver",
  "kube-controller-manager",
  "kube-scheduler",
  "kubeletconfiguration",
  "corednsdeployment",
] as const;
export type PatchTarget = (typeof PATCH_TARGETS)[number];

export type PatchType = "strategic" | "merge" | "json";

/** The k8s.io/apimachinery types.PatchType names kubeadm prints. */
export const PATCH_CONTENT_TYPES: Record<PatchType, string> = {
  json: "application/json-patch+json",
  merge: "application/merge-patch+json",
  strategic: "application/strategic-merge-patch+json",
};

/** Strategic merge metadata per target (the Go type kubeadm hands the library). */
const TARGET_SCHEMAS: Record<PatchTarget, TypeSchema> = {
  etcd: POD_SCHEMA,
  "kube-apiserver": POD_SCHEMA,
  "kube-controller-manager": POD_SCHEMA,
  "kube-scheduler": POD_SCHEMA,
  kubeletconfiguration: KUBELET_CONFIGURATION_SCHEMA,
  corednsdeployment: DEPLOYMENT_SCHEMA,
};

/** One patch file: all its documents, applied in order. */
export interface PatchFile {
  /** Where it came from, for messages. */
  source: string;
  target: PatchTarget;
  type: PatchType;
  /** Each document of the file as JSON. */
  patches: JSONValue[];
}

/** The patch files of a directory, in the order kubeadm applies them. */
export interface PatchSet {
  dir: string;
  files: PatchFile[];
  /** Base names of files that were skipped (unknown target or extension, empty). */
  ignored: string[];
}

export type ParsedPatchFileName =
  { kind: "patch"; target: PatchTarget; type: PatchType } | { kind: "ignored"; reason: string };

/**
 * kubeadm's parseFilename. An unknown extension or target only makes kubeadm ignore the file
 * (with a message); a "+" not followed by a known patch type is an error.
 */
export function parsePatchFileName(fileName: string): ParsedPatchFileName {
  if (!/^.+\.(json|yaml)$/.test(fileName)) {
    return { kind: "ignored", reason: "the file extension must be one of [json yaml]" };
  }
  const targets = PATCH_TARGETS.join("|");
  const m = new RegExp(`^(${targets})([^.+\\n]*)?(\\+)?(json|merge|strategic)?`).exec(fileName);
  if (!m) {
    return {
      kind: "ignored",
      reason: `unknown target, must be one of [${PATCH_TARGETS.join(" ")}]`,
    };
  }
  if (m[3] && !m[4]) {
    throw new Error(
      `patch file "${fileName}": unknown or missing patch type after '+', must be one of [json merge strategic]`,
    );
  }
  return { kind: "patch", target: m[1] as PatchTarget, type: (m[4] ?? "strategic") as PatchType };
}

/** kubeadm's CreatePatchSet: splits a file into YAML/JSON documents, skipping empty ones. */
export function createPatchFile(
  source: string,
  target: PatchTarget,
  type: PatchType,
  text: string,
): PatchFile {
  let documents: unknown[];
  try {
    documents = parseYAMLDocuments(text, `patch file ${source}`);
  } catch (e) {
    throw new Error((e as Error).message, { cause: e });
  }
  // Checked here, when the directory is read, so that nothing is written from a bad patch: a
  // scalar or list as a merge patch would replace the whole manifest (RFC 7386).
  documents.forEach((doc, i) => {
    const ok = type === "json" ? Array.isArray(doc) : isMapping(doc);
    if (!ok) {
      const want = type === "json" ? "a list of JSON patch operations" : "a mapping";
      throw new Error(
        `patch file ${source}: document ${i + 1} is ${describeDocument(doc)}, not ${want}`,
      );
    }
  });
  return { source, target, type, patches: documents as JSONValue[] };
}

/** What reading a patch directory needs from the machine it is on (a Host is one). */
export interface PatchDirReader {
  readDir(path: string): Promise<string[]>;
  stat(path: string): Promise<{ isFile: boolean; isDirectory: boolean } | undefined>;
  readFile(path: string): Promise<Buffer>;
  /** Whether the entry itself is a symbolic link; a reader without it is taken to have none. */
  isSymbolicLink?(path: string): Promise<boolean>;
}

/** The most entries a patch directory's tree may hold, and its deepest folder. */
export const MAX_PATCH_DIR_ENTRIES = 1000;
export const MAX_PATCH_DIR_DEPTH = 8;

interface LoadedPatchSet {
  set: PatchSet;
  /** What reading it says, printed once, by the first caller that prints. */
  lines: string[];
  printed: boolean;
}

const cache = new WeakMap<object, Map<string, Promise<LoadedPatchSet>>>();

/**
 * Reads a patch directory through a host, once per `cacheKey` (default: the reader) and
 * directory, as kubeadm reads it once per process (GetPatchManagerForPath). Files in
 * sub-directories are read too: kubeadm walks the tree (filepath.Walk) in lexical order, and
 * that order is the order patches apply in. Every file is parsed and checked when the directory
 * is read, so a caller that reads it before writing anything (preflight) stops a bad patch
 * before any file changes; its lines go to the first caller that passes `log`, where kubeadm
 * prints them (the first phase that applies patches).
 */
export async function readPatchDirectory(
  reader: PatchDirReader,
  dir: string,
  log?: (line: string) => void,
  cacheKey: object = reader,
): Promise<PatchSet> {
  let perReader = cache.get(cacheKey);
  if (!perReader) cache.set(cacheKey, (perReader = new Map<string, Promise<LoadedPatchSet>>()));
  let pending = perReader.get(dir);
  if (!pending) {
    pending = loadPatchDirectory(reader, dir);
    perReader.set(dir, pending);
    // A failed read is not remembered: the next phase reports it again.
    pending.catch(() => perReader.delete(dir));
  }
  const loaded = await pending.catch((e: unknown) => {
    log?.(`[patches] Reading patches from path "${dir}"`);
    throw e;
  });
  if (log && !loaded.printed) {
    loaded.printed = true;
    for (const line of loaded.lines) log(line);
  }
  return loaded.set;
}

async function loadPatchDirectory(reader: PatchDirReader, dir: string): Promise<LoadedPatchSet> {
  const lines = [`[patches] Reading patches from path "${dir}"`];
  const info = await reader.stat(dir);
  if (!info) throw new Error(`could not list patch files for path "${dir}": it does not exist`);
  if (!info.isDirectory) {
    throw new Error(`could not list patch files for path "${dir}": not a directory`);
  }
  const set: PatchSet = { dir, files: [], ignored: [] };
  await walk(reader, { root: dir, set, lines, seen: 0 }, dir, 0);
  if (set.files.length > 0) {
    lines.push(
      `[patches] Found the following patch files: [${set.files.map((f) => posix.basename(f.source)).join(" ")}]`,
    );
  }
  if (set.ignored.length > 0) {
    lines.push(`[patches] Ignored the following files: [${set.ignored.join(" ")}]`);
  }
  return { set, lines, printed: false };
}

interface Walk {
  root: string;
  set: PatchSet;
  lines: string[];
  /** Entries seen so far, against MAX_PATCH_DIR_ENTRIES. */
  seen: number;
}

function tooLarge(w: Walk, what: string): Error {
  return new Error(
    `could not list patch files for path "${w.root}": ${what}; point --patches (or patches.directory) at the folder of patch files`,
  );
}

async function walk(reader: PatchDirReader, w: Walk, dir: string, depth: number): Promise<void> {
  if (depth > MAX_PATCH_DIR_DEPTH)
    throw tooLarge(w, `it nests folders more than ${MAX_PATCH_DIR_DEPTH} deep`);
  const names = [...(await reader.readDir(dir))].sort(compareBytes);
  for (const name of names) {
    if (++w.seen > MAX_PATCH_DIR_ENTRIES)
      throw tooLarge(w, `it holds more than ${MAX_PATCH_DIR_ENTRIES} entries`);
    const path = posix.join(dir, name);
    const info = await reader.stat(path);
    if (!info) continue; // vanished, or a dangling link
    if (info.isDirectory) {
      // filepath.Walk reports a link as a link and does not descend it; kubeadm then treats the
      // entry by its name like a file. A linked folder is not followed here either.
      if (await reader.isSymbolicLink?.(path)) {
        w.lines.push(`[patches] Ignoring "${name}": a link to a folder is not followed`);
        w.set.ignored.push(name);
        continue;
      }
      await walk(reader, w, path, depth + 1);
      continue;
    }
    if (!info.isFile) {
      // A FIFO or a device would block the read or never end it.
      w.lines.push(`[patches] Ignoring "${name}": not a regular file`);
      w.set.ignored.push(name);
      continue;
    }
    await readPatchFile(reader, w, path, name);
  }
}

async function readPatchFile(reader: PatchDirReader, w: Walk, path: string, name: string) {
  const parsed = parsePatchFileName(name);
  if (parsed.kind === "ignored") {
    w.lines.push(`[patches] Ignoring file "${name}": ${parsed.reason}`);
    w.set.ignored.push(name);
    return;
  }
  let data: Buffer;
  try {
    data = await reader.readFile(path);
  } catch (e) {
    throw new Error(`could not read the patch file "${path}": ${(e as Error).message}`, {
      cause: e,
    });
  }
  if (data.length === 0) {
    w.lines.push(`[patches] Ignoring empty file: "${name}"`);
    w.set.ignored.push(name);
    return;
  }
  w.set.files.push(createPatchFile(path, parsed.target, parsed.type, data.toString("utf8")));
}

/**
 * kubeadm's ApplyPatchesToTarget: every patch of every file for `target`, in order. The object
 * is not modified; the patched copy is returned. Errors name the file and the patch type.
 */
export function applyPatches<T extends object>(
  target: PatchTarget,
  object: T,
  set: PatchSet | undefined,
  log?: (line: string) => void,
): T {
  if (!PATCH_TARGETS.includes(target)) {
    throw new Error(
      `unknown patch target name "${String(target)}", must be one of [${PATCH_TARGETS.join(" ")}]`,
    );
  }
  // Through JSON, as kubeadm converts the target to JSON before patching.
  let data = JSON.parse(JSON.stringify(object)) as JSONValue;
  for (const file of set?.files ?? []) {
    if (file.target !== target) continue;
    for (const patch of file.patches) {
      try {
        data = applyOne(file.type, data, patch, TARGET_SCHEMAS[target]);
      } catch (e) {
        throw new Error(
          `could not apply the patch of type "${PATCH_CONTENT_TYPES[file.type]}" from ${file.source} to target "${target}": ${describe(e)}`,
          { cause: e },
        );
      }
      log?.(
        `[patches] Applied patch of type "${PATCH_CONTENT_TYPES[file.type]}" to target "${target}"`,
      );
    }
  }
  return data as T;
}

function applyOne(
  type: PatchType,
  data: JSONValue,
  patch: JSONValue,
  schema: TypeSchema,
): JSONValue {
  switch (type) {
    case "json": {
      if (!Array.isArray(patch)) throw new Error("a JSON patch must be a list of operations");
      const result = fastJsonPatch.applyPatch(data, patch as unknown as Operation[], true, false);
      return result.newDocument;
    }
    case "merge":
      return mergePatch(data, patch);
    case "strategic":
      return strategicMergePatch(data, patch, schema);
  }
}

/** RFC 7386 JSON merge patch (evanphx/json-patch MergePatch). */
export function mergePatch(target: JSONValue, patch: JSONValue): JSONValue {
  if (patch === null || typeof patch !== "object" || Array.isArray(patch))
    return structuredClone(patch);
  const out: JSONMap =
    target !== null && typeof target === "object" && !Array.isArray(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key] ?? null, value);
  }
  return out;
}

function describe(e: unknown): string {
  if (e instanceof Error) {
    // fast-json-patch puts a multi-line dump of the operation and tree in its message.
    const first = e.message.split("\n")[0]!.trim();
    const name = (e as { name?: string }).name;
    return name && name !== "Error" && /^[A-Z_]+$/.test(name) ? `${first} (${name})` : first;
  }
  return String(e);
}
