import { ConfigError, decodeConfigDocuments } from "../load.js";
import type { ConfigDocuments } from "../types.js";
import { validateConfigDocuments } from "../validate.js";
import { parseYAMLDocuments } from "../yaml.js";
import type { FieldReader } from "./fields.js";

// The kubeadm documents a Cluster carries (after the Cluster document in the same file, inline
// in kubeadm.documents, in kubeadm.configFile, or from an override): decoded here with kubeadm's
// own strict loader so a typo is reported before any host is touched, and kept as text for the
// init/join workflows, which read them again.

/** One place kubeadm documents came from; `where` names it in problems ("cluster.yaml"). */
export interface KubeadmSource {
  where: string;
  text: string;
}

type DocKey = "init" | "cluster" | "join" | "kubelet" | "kubeProxy";

export const KIND_OF: Record<DocKey, string> = {
  init: "InitConfiguration",
  cluster: "ClusterConfiguration",
  join: "JoinConfiguration",
  kubelet: "KubeletConfiguration",
  kubeProxy: "KubeProxyConfiguration",
};
const DOC_KEYS = Object.keys(KIND_OF) as DocKey[];

export interface CollectedKubeadm {
  /** Every source's documents, joined by `---` (undefined when there are none). */
  documents?: string;
  /** The documents decoded (v1beta3 converted), merged across sources. */
  docs: ConfigDocuments;
  /** Which source each kind came from. */
  whereOf: Partial<Record<DocKey, string>>;
}

function holdsDocuments(text: string, where: string, problems: string[]): boolean {
  try {
    return parseYAMLDocuments(text, where).length > 0;
  } catch (e) {
    // The YAML error names the source, line and column; its cause (which quotes the
    // offending line) is dropped, as the text could hold a secret.
    problems.push((e as Error).message);
    return false;
  }
}

/** Decodes every source, reporting problems (each naming its source and kind) and duplicates. */
export function collectKubeadmDocuments(
  sources: readonly KubeadmSource[],
  problems: string[],
  warn: (message: string) => void,
): CollectedKubeadm {
  const texts: string[] = [];
  const docs: ConfigDocuments = { ignoredKinds: [] };
  const whereOf: CollectedKubeadm["whereOf"] = {};
  for (const { where, text } of sources) {
    if (!holdsDocuments(text, where, problems)) continue;
    texts.push(text.endsWith("\n") ? text : `${text}\n`);
    let decoded: ConfigDocuments;
    try {
      decoded = decodeConfigDocuments(text, where);
    } catch (e) {
      if (e instanceof ConfigError) problems.push(...e.problems);
      else problems.push((e as Error).message);
      continue;
    }
    for (const w of decoded.warnings ?? []) warn(w);
    // Labelled "<where>: <Kind>": refused for versions whose kubeadm no longer reads them.
    if (decoded.v1beta3Documents?.length) {
      docs.v1beta3Documents = [...(docs.v1beta3Documents ?? []), ...decoded.v1beta3Documents];
    }
    for (const kind of decoded.ignoredKinds) {
      // The upgrade reads an UpgradeConfiguration's timeouts (cluster/upgrade/work.ts).
      if (kind === "UpgradeConfiguration") continue;
      warn(`${where}: ${kind} is not used by kubeforge up and is ignored`);
      docs.ignoredKinds.push(kind);
    }
    if (decoded.upgrade !== undefined) {
      if (docs.upgrade !== undefined) {
        problems.push(
          `${where}: UpgradeConfiguration is given twice; merge them into one document`,
        );
      } else docs.upgrade = decoded.upgrade;
    }
    for (const key of DOC_KEYS) {
      const doc = decoded[key];
      if (doc === undefined) continue;
      const previous = whereOf[key];
      if (previous !== undefined) {
        problems.push(
          `${where}: ${KIND_OF[key]} is given twice (also in ${previous}); merge them into one document`,
        );
        continue;
      }
      whereOf[key] = where;
      (docs as Record<DocKey, unknown>)[key] = doc;
    }
  }
  return { ...(texts.length > 0 ? { documents: texts.join("---\n") } : {}), docs, whereOf };
}

export type NetworkingField = "podSubnet" | "serviceSubnet" | "dnsDomain";
const NETWORKING_FIELDS: readonly NetworkingField[] = ["podSubnet", "serviceSubnet", "dnsDomain"];

/** Where the cluster's networking value came from. */
export type NetworkingOrigin = "cluster" | "default" | "kubeadm";

// kubeadm requires discovery in a JoinConfiguration; `up` fills it in (the Cluster refuses one
// written by the user), so validation sees a placeholder of the right shape.
const PLACEHOLDER_DISCOVERY = {
  bootstrapToken: {
    token: "abcdef.0123456789abcdef",
    apiServerEndpoint: "kubeforge.invalid:6443",
    unsafeSkipCAVerification: true,
  },
};

/**
 * kubeadm's validation of the documents, with the networking the cluster will really use
 * (the Cluster's fields, else the ClusterConfiguration's, else the defaults) in place of the
 * ClusterConfiguration's own. A problem with a networking field the Cluster set (or defaulted)
 * is reported at that Cluster field; the rest name the document they were written in.
 * Validation's problems each start with their field's path (config/validate.ts), which is
 * how a problem is placed.
 */
export function reportKubeadmValidation(
  collected: CollectedKubeadm,
  networking: { podSubnet?: string; serviceSubnet: string; dnsDomain: string },
  origins: Readonly<Record<NetworkingField, NetworkingOrigin>>,
  reader: FieldReader,
): void {
  const { docs, whereOf } = collected;
  const merged: ConfigDocuments = {
    ...docs,
    cluster: { ...docs.cluster, networking: { ...networking } },
    ...(docs.join
      ? { join: { ...docs.join, discovery: docs.join.discovery ?? PLACEHOLDER_DISCOVERY } }
      : {}),
  };
  for (const problem of validateConfigDocuments(merged)) {
    const at = problem.indexOf(": ");
    const field = problem.slice(0, at);
    const networkingField = NETWORKING_FIELDS.find(
      (f) => field === `ClusterConfiguration.networking.${f}` && origins[f] !== "kubeadm",
    );
    if (networkingField !== undefined) {
      reader.report(
        `networking.${networkingField}`,
        problem.slice(at + 2),
        origins[networkingField] === "default" ? "(the default)" : undefined,
      );
      continue;
    }
    const key = DOC_KEYS.find((k) => field.startsWith(`${KIND_OF[k]}.`));
    const where = key !== undefined ? whereOf[key] : undefined;
    reader.problems.push(`${where ?? "the kubeadm documents"}: ${problem}`);
  }
}
