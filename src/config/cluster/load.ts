import { ConfigError } from "../load.js";
import { parseYAMLDocuments, toYAMLDocuments } from "../yaml.js";
import { decodeClusterDocument } from "./decode.js";
import { FieldReader, isMapping } from "./fields.js";
import { describeDocument, quoteValue } from "../values.js";
import { collectKubeadmDocuments, type CollectedKubeadm, type KubeadmSource } from "./kubeadm.js";
import { applyFeatureGates, kubeadmGateProblems } from "./shortcuts.js";
import { resolveRunnerPath, type PathContext } from "./paths.js";
import {
  CLUSTER_API_GROUP,
  CLUSTER_API_VERSION,
  CLUSTER_KIND,
  type ClusterOverrides,
  type ClusterSpec,
} from "./types.js";
import { buildClusterSpec } from "./build.js";

// Reading a Cluster file: one kubeforge.dev/v1alpha1 Cluster document, optionally followed (or
// preceded) by kubeadm documents in the same YAML stream. Pure: files the Cluster names are read
// through the caller's `readFile` (kubeadm.configFile) or left to the caller with their paths
// resolved (ssh.privateKeyFile, a cni manifest, kubeletBinary, kubeadm.patchesDir).

export interface LoadClusterOptions extends PathContext {
  /**
   * Reads kubeadm.configFile (an absolute path, or relative when `baseDir` is unknown). Needed
   * only when the Cluster sets it; a synchronous read (fs.readFileSync) is what it expects.
   */
  readFile?: (path: string) => string;
  /** Values from the action's inputs or flags; they win over the file's. */
  overrides?: ClusterOverrides;
  /** Warnings: deprecated kubeadm API versions, ignored kinds, an even number of control planes. */
  warn?: (message: string) => void;
}

type OverrideKey = Exclude<keyof ClusterOverrides, "from">;

/**
 * Applies overrides to the raw document; returns the field paths they set → their origin, and
 * the fields an override may not replace (`clashes`: reported once the reader exists).
 */
function applyOverrides(
  doc: Record<string, unknown>,
  o: ClusterOverrides,
): { origins: Map<string, string>; clashes: { path: string; message: string }[] } {
  const origins = new Map<string, string>();
  const clashes: { path: string; message: string }[] = [];
  const set = (key: OverrideKey, path: string, apply: (value: unknown) => void) => {
    const value = o[key];
    if (value === undefined) return;
    apply(value);
    origins.set(path, o.from?.[key] ?? "an override");
  };
  /** A nested mapping to write into; a value of the wrong type is left for decoding to report. */
  const section = (name: string): Record<string, unknown> | undefined => {
    const current = doc[name];
    if (current === null || current === undefined) return (doc[name] = {});
    return isMapping(current) ? current : undefined;
  };
  for (const key of [
    "name",
    "kubernetesVersion",
    "cni",
    "storage",
    "registry",
    "wait",
    "kubeletBinary",
    "skipPhases",
  ] as const) {
    set(key, key, (v) => (doc[key] = v));
  }
  set("podSubnet", "networking.podSubnet", (v) => {
    const n = section("networking");
    if (n) n.podSubnet = v;
  });
  set("serviceSubnet", "networking.serviceSubnet", (v) => {
    const n = section("networking");
    if (n) n.serviceSubnet = v;
  });
  for (const [key, field] of [
    ["prepare", "enabled"],
    ["installPackages", "installPackages"],
    ["prePullImages", "prePullImages"],
  ] as const) {
    set(key, `prepare.${field}`, (v) => {
      const p = section("prepare");
      if (p) p[field] = v;
    });
  }
  set("privateKey", "ssh.privateKey", (v) => {
    const s = section("ssh");
    if (!s) return;
    delete s.privateKeyFile;
    s.privateKey = v;
  });
  for (const key of ["passphrase", "password", "sudoPassword"] as const) {
    set(key, `ssh.${key}`, (v) => {
      const s = section("ssh");
      if (s) s[key] = v;
    });
  }
  set("hostKeyFingerprints", "ssh.hostKeyFingerprints", (v) => {
    const s = section("ssh");
    if (s) s.hostKeyFingerprints = v;
  });
  set("nodes", "nodes", (v) => {
    if (doc.nodes !== undefined && doc.nodes !== null) {
      clashes.push({
        path: "nodes",
        message:
          "the Cluster file lists nodes of its own; give the node counts or the file's nodes, not both",
      });
      return;
    }
    doc.nodes = v;
  });
  return { origins, clashes };
}

function splitDocuments(docs: unknown[], source: string, problems: string[]) {
  const clusters: { index: number; doc: Record<string, unknown> }[] = [];
  const others: Record<string, unknown>[] = [];
  let sawOtherKubeforge = false;
  docs.forEach((doc, i) => {
    const where = `${source}: document ${i + 1}`;
    if (!isMapping(doc)) {
      problems.push(`${where} is ${describeDocument(doc)}, not a mapping with apiVersion and kind`);
      return;
    }
    const { apiVersion, kind } = doc;
    if (
      typeof apiVersion !== "string" ||
      apiVersion === "" ||
      typeof kind !== "string" ||
      kind === ""
    ) {
      problems.push(`${where} has no apiVersion or no kind; every document needs both`);
      return;
    }
    const group = apiVersion.includes("/") ? apiVersion.slice(0, apiVersion.indexOf("/")) : "";
    if (group !== CLUSTER_API_GROUP) {
      others.push(doc);
    } else if (kind !== CLUSTER_KIND) {
      sawOtherKubeforge = true;
      problems.push(
        `${where}: unknown kind "${kind}" for apiVersion "${apiVersion}"; only ${CLUSTER_KIND} exists`,
      );
    } else if (apiVersion !== CLUSTER_API_VERSION) {
      sawOtherKubeforge = true;
      problems.push(
        `${where}: apiVersion "${apiVersion}" is not supported; use ${CLUSTER_API_VERSION}`,
      );
    } else {
      clusters.push({ index: i + 1, doc });
    }
  });
  return { clusters, others, sawOtherKubeforge };
}

/**
 * Reads, validates and defaults a Cluster file. Throws a ConfigError listing every problem, each
 * one sentence starting with `source` and the field path; secrets are never quoted.
 */
export function loadClusterSpec(
  text: string,
  source: string,
  opts: LoadClusterOptions = {},
): ClusterSpec {
  const problems: string[] = [];
  const warn = opts.warn ?? (() => {});
  let docs: unknown[];
  try {
    docs = parseYAMLDocuments(text, source);
  } catch (e) {
    // Only the message (file, line, column, reason): the parser's own text quotes the line,
    // which could hold a key.
    throw new ConfigError([(e as Error).message]);
  }
  const { clusters, others, sawOtherKubeforge } = splitDocuments(docs, source, problems);
  if (clusters.length === 0) {
    // A kubeforge.dev document of another version or kind has been reported already.
    if (sawOtherKubeforge) throw new ConfigError(problems);
    problems.push(
      `${source}: no ${CLUSTER_API_VERSION} ${CLUSTER_KIND} document (it starts with "apiVersion: ${CLUSTER_API_VERSION}" and "kind: ${CLUSTER_KIND}")`,
    );
    throw new ConfigError(problems);
  }
  if (clusters.length > 1) {
    problems.push(
      `${source}: documents ${clusters.map((c) => c.index).join(" and ")} are both ${CLUSTER_KIND} documents; a file describes one cluster`,
    );
  }

  const raw = structuredClone(clusters[0]!.doc);
  const { origins, clashes } = applyOverrides(raw, opts.overrides ?? {});
  const originOf = (path: string): string | undefined => {
    for (const [prefix, origin] of origins) {
      if (path === prefix || path.startsWith(`${prefix}.`) || path.startsWith(`${prefix}[`)) {
        return origin;
      }
    }
    return undefined;
  };
  const reader = new FieldReader(problems, source, originOf);
  for (const c of clashes) reader.report(c.path, c.message);
  const input = decodeClusterDocument(raw, reader);

  const sources: KubeadmSource[] = [];
  if (others.length > 0)
    sources.push({ where: source, text: toYAMLDocuments(others, { sortKeys: false }) });
  if (input.kubeadm?.documents !== undefined) {
    sources.push({ where: `${source}: kubeadm.documents`, text: input.kubeadm.documents });
  }
  let configFile: string | undefined;
  if (input.kubeadm?.configFile !== undefined) {
    const written = input.kubeadm.configFile;
    const resolved = resolveRunnerPath(written, opts);
    if (typeof resolved !== "string") {
      reader.report("kubeadm.configFile", `${quoteValue(written)}: ${resolved.problem}`);
    } else if (!opts.readFile) {
      reader.report(
        "kubeadm.configFile",
        `${resolved} cannot be read here (no file access was given)`,
      );
    } else {
      configFile = resolved;
      try {
        sources.push({ where: resolved, text: opts.readFile(resolved) });
      } catch (e) {
        reader.report("kubeadm.configFile", `cannot read ${resolved}: ${(e as Error).message}`);
      }
    }
  }
  if (opts.overrides?.kubeadmDocuments !== undefined) {
    sources.push({
      where: opts.overrides.from?.kubeadmDocuments ?? "the kubeadm documents override",
      text: opts.overrides.kubeadmDocuments,
    });
  }
  const kubeadm = withFeatureGates(
    collectKubeadmDocuments(sources, problems, warn),
    opts.overrides,
    problems,
  );
  const ipFamily = opts.overrides?.ipFamily;

  const spec = buildClusterSpec(input, reader, {
    source,
    kubeadm,
    ...(ipFamily !== undefined
      ? { ipFamily: { family: ipFamily, origin: opts.overrides?.from?.ipFamily ?? "ipFamily" } }
      : {}),
    ...(configFile !== undefined ? { configFile } : {}),
    ...(opts.baseDir !== undefined ? { baseDir: opts.baseDir } : {}),
    ...(opts.home !== undefined ? { home: opts.home } : {}),
    warn,
  });
  const gates = opts.overrides?.featureGates;
  if (gates !== undefined) {
    const origin = opts.overrides?.from?.featureGates ?? "featureGates";
    problems.push(...kubeadmGateProblems(gates, spec.kubernetesVersion, origin));
  }
  if (problems.length > 0) throw new ConfigError([...new Set(problems)], reader.located);
  return spec;
}

/**
 * The kubeadm documents with the featureGates override merged in; a document the gates made is
 * named after the override in later problems (an unknown kubeadm gate, say).
 */
function withFeatureGates(
  kubeadm: CollectedKubeadm,
  o: ClusterOverrides | undefined,
  problems: string[],
): CollectedKubeadm {
  const gates = o?.featureGates;
  if (gates === undefined || Object.keys(gates).length === 0) return kubeadm;
  const origin = o?.from?.featureGates ?? "featureGates";
  const docs = applyFeatureGates(kubeadm.docs, gates, origin, kubeadm.whereOf, problems);
  const whereOf = { ...kubeadm.whereOf };
  for (const key of ["cluster", "kubelet", "kubeProxy"] as const) {
    if (docs[key] !== undefined) whereOf[key] ??= origin;
  }
  return { ...kubeadm, docs, whereOf };
}

/** True when the text holds a kubeforge.dev document (so it is a Cluster file, not kubeadm's). */
export function holdsClusterDocument(text: string, source: string): boolean {
  let docs: unknown[];
  try {
    docs = parseYAMLDocuments(text, source);
  } catch {
    return false;
  }
  return docs.some(
    (d) =>
      isMapping(d) &&
      typeof d.apiVersion === "string" &&
      d.apiVersion.startsWith(`${CLUSTER_API_GROUP}/`),
  );
}

export { defaultClusterSpec } from "./defaults.js";
