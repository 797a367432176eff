import { YAMLException } from "js-yaml";
import type { KubeObject } from "../types/kube-object.js";
import { loadYAMLDocuments, YAMLBoundError } from "./yaml.js";

// A manifest of Kubernetes objects given by a user (a CNI, the upgrade probes' workloads):
// parsed and checked whole before anything is applied. A document that is not an object with
// apiVersion, kind and metadata.name refuses the manifest, naming it and the document (1 = the
// first in the stream, counting empty ones, as `---` separators number them). `kind: List`
// documents are expanded into their items, as kubectl does.

/** The 1-based document of the stream that holds 0-based `line`. */
function documentAt(text: string, line: number): number {
  const lines = text.split("\n").slice(0, line + 1);
  let doc = 1;
  let content = false;
  for (const l of lines) {
    if (/^---(\s|$)/.test(l)) {
      // A separator before any content starts the first document, not a second one.
      if (content) doc++;
      content = true;
    } else if (l.trim() !== "" && !l.trimStart().startsWith("#")) content = true;
  }
  return doc;
}

function isMap(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

const nonEmpty = (v: unknown): v is string => typeof v === "string" && v !== "";

/** What is wrong with one object of the manifest, or undefined. */
function objectProblem(doc: unknown): string | undefined {
  if (!isMap(doc)) return `is a ${Array.isArray(doc) ? "list" : typeof doc}, not an object`;
  const missing: string[] = [];
  if (!nonEmpty(doc.apiVersion)) missing.push("apiVersion");
  if (!nonEmpty(doc.kind)) missing.push("kind");
  if (!isMap(doc.metadata) || !nonEmpty(doc.metadata.name)) missing.push("metadata.name");
  if (missing.length === 0) return undefined;
  return `has no ${missing.join(", no ")} (every object needs apiVersion, kind and metadata.name)`;
}

/** Parses and checks a manifest's text; `source` names it in errors. */
export function parseManifest(text: string, source: string, label: string): KubeObject[] {
  let docs: unknown[];
  try {
    docs = loadYAMLDocuments(text, source);
  } catch (e) {
    if (e instanceof YAMLException && e.mark) {
      throw new Error(
        `${label} ${source}: document ${documentAt(text, e.mark.line)} is not valid YAML (line ${e.mark.line + 1}, column ${e.mark.column + 1}): ${e.reason}`,
        { cause: e },
      );
    }
    if (e instanceof YAMLBoundError) {
      throw new Error(`${label} ${source}: ${e.message}`, { cause: e });
    }
    throw new Error(`${label} ${source} is not valid YAML: ${(e as Error).message}`, {
      cause: e,
    });
  }
  const objects: KubeObject[] = [];
  const problems: string[] = [];
  docs.forEach((doc, i) => {
    if (doc === null || doc === undefined) return;
    const where = `document ${i + 1}`;
    if (
      isMap(doc) &&
      typeof doc.kind === "string" &&
      doc.kind.endsWith("List") &&
      Array.isArray(doc.items)
    ) {
      doc.items.forEach((item: unknown, j) => {
        const problem = objectProblem(item);
        if (problem) problems.push(`${where}, item ${j + 1}: ${problem}`);
        else objects.push(item as KubeObject);
      });
      return;
    }
    const problem = objectProblem(doc);
    if (problem) problems.push(`${where}: ${problem}`);
    else objects.push(doc as unknown as KubeObject);
  });
  if (problems.length === 1) throw new Error(`${label} ${source}: ${problems[0]}`);
  if (problems.length > 1) {
    throw new Error(
      `${label} ${source} has ${problems.length} unusable documents:\n${problems.map((p) => ` - ${source}: ${p}`).join("\n")}`,
    );
  }
  if (objects.length === 0) throw new Error(`${label} ${source} holds no objects`);
  return objects;
}
