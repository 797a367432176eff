import { posix } from "node:path";
import { DEFAULT_ETCD_DATA_DIR, MANIFESTS_DIR } from "../../config/paths.js";
import type { ClusterConfiguration } from "../../config/types.js";
import { parseYAMLDocuments } from "../../config/yaml.js";
import { ETCD_CLIENT_URLS_ANNOTATION } from "../../manifests/etcd.js";
import { certFile, keyFile } from "../../pki/paths.js";
import { readFileIfExists } from "../../remote/host.js";
import type { Phase, PhaseContext } from "../../workflow/phase.js";
import { cleanDir, isDirEmpty, messageOf } from "./clean.js";
import type { ResetData } from "./data.js";
import type { EtcdRemoval, LocalEtcdMember } from "./etcd-access.js";
import { tell } from "./wording.js";

// kubeadm's remove-etcd-member phase (cmd/phases/reset/removeetcdmember.go, v1.35): on a node
// with a local etcd, remove its member from the etcd cluster, then delete the contents of the
// etcd data directory. Where the data directory is (getEtcdDataDir): the cluster's
// ClusterConfiguration when the API answered, else the etcd.yaml static Pod's "etcd-data"
// volume, else (no etcd.yaml) the default /var/lib/etcd; an etcd.yaml without that volume means
// external etcd, which reset never touches. A failed removal is a warning, and the data directory
// is cleaned anyway (kubeadm's fallback clean).
// kubeforge differences: the member is found from etcd.yaml's own flags (its peer and client
// URLs), so it is removed even when the API server is gone; a cluster configured with external
// etcd never has a local data directory cleaned.

export const ETCD_MANIFEST = posix.join(MANIFESTS_DIR, "etcd.yaml");
/** kubeadm: the etcd Pod's data volume name (etcdVolumeName). */
const ETCD_DATA_VOLUME = "etcd-data";

/** What etcd.yaml says about the member running on this node. */
export interface EtcdManifestInfo {
  /** hostPath of the "etcd-data" volume; absent: not a kubeadm local etcd manifest. */
  dataDir?: string;
  member?: LocalEtcdMember;
}

interface ManifestPod {
  metadata?: { annotations?: Record<string, string> };
  spec?: {
    containers?: { name?: string; command?: string[]; args?: string[] }[];
    volumes?: { name?: string; hostPath?: { path?: string } }[];
  };
}

/** The first URL of a `--flag=url1,url2` argument. */
function firstURL(argv: readonly string[], flag: string): string | undefined {
  const prefix = `--${flag}=`;
  const arg = [...argv].reverse().find((a) => a.startsWith(prefix));
  return arg?.slice(prefix.length).split(",")[0]?.trim() || undefined;
}

/** Reads etcd.yaml (kubeadm: ReadStaticPodFromDisk). Throws when it is not a Pod manifest. */
export function parseEtcdManifest(text: string, source: string): EtcdManifestInfo {
  const doc = parseYAMLDocuments(text, source)[0];
  if (typeof doc !== "object" || doc === null) throw new Error(`${source} holds no Pod`);
  const pod = doc as ManifestPod;
  const dataDir = pod.spec?.volumes?.find((v) => v.name === ETCD_DATA_VOLUME)?.hostPath?.path;
  const container =
    pod.spec?.containers?.find((c) => c.name === "etcd") ?? pod.spec?.containers?.[0];
  const argv = [...(container?.command ?? []), ...(container?.args ?? [])];
  const peerURL = firstURL(argv, "initial-advertise-peer-urls");
  const clientURL =
    firstURL(argv, "advertise-client-urls") ??
    pod.metadata?.annotations?.[ETCD_CLIENT_URLS_ANNOTATION]?.split(",")[0];
  const name = argv.find((a) => a.startsWith("--name="))?.slice("--name=".length);
  return {
    ...(dataDir ? { dataDir } : {}),
    ...(peerURL && clientURL ? { member: { peerURL, clientURL, ...(name ? { name } : {}) } } : {}),
  };
}

export type EtcdDataLocation =
  | { kind: "local"; dataDir: string; member: LocalEtcdMember | undefined }
  | { kind: "external"; reason: string };

/** kubeadm's getEtcdDataDir, plus the member to remove. */
export function locateEtcdData(
  cluster: ClusterConfiguration | undefined,
  manifest: { text: string } | undefined,
): EtcdDataLocation {
  if (cluster?.etcd?.external) {
    return { kind: "external", reason: "the cluster's configuration names an external etcd" };
  }
  let info: EtcdManifestInfo | undefined;
  if (manifest) {
    try {
      info = parseEtcdManifest(manifest.text, ETCD_MANIFEST);
    } catch (e) {
      return { kind: "external", reason: messageOf(e) };
    }
  }
  const fromCluster = cluster?.etcd?.local
    ? (cluster.etcd.local.dataDir ?? DEFAULT_ETCD_DATA_DIR)
    : undefined;
  if (fromCluster) return { kind: "local", dataDir: fromCluster, member: info?.member };
  // etcd.yaml may be gone already (cleanup-node ran first): kubeadm falls back to the default.
  if (!info) return { kind: "local", dataDir: DEFAULT_ETCD_DATA_DIR, member: undefined };
  if (!info.dataDir) return { kind: "external", reason: "invalid etcd pod manifest" };
  return { kind: "local", dataDir: info.dataDir, member: info.member };
}

async function etcdCredentials(data: ResetData) {
  const dir = data.certificatesDir;
  const read = async (path: string) => (await data.host.readFile(path)).toString("utf8");
  try {
    return {
      ca: await read(certFile(dir, "etcd/ca")),
      cert: await read(certFile(dir, "etcd/healthcheck-client")),
      key: await read(keyFile(dir, "etcd/healthcheck-client")),
    };
  } catch (e) {
    throw new Error(`cannot read the etcd client credentials in ${dir}/etcd: ${messageOf(e)}`, {
      cause: e,
    });
  }
}

async function removeMember(data: ResetData, member: LocalEtcdMember, ctx: PhaseContext) {
  const who = `${member.name ? `${member.name} ` : ""}(${member.peerURL})`;
  try {
    const outcome = await data.etcd.removeMember(
      data.host,
      member,
      await etcdCredentials(data),
      data.client,
    );
    const lines: Record<EtcdRemoval, string> = {
      "dry-run": "[reset] Would remove the etcd member on this node from the etcd cluster",
      removed: `[reset] Removed etcd member ${who} from the etcd cluster`,
      "only-member": `[reset] The etcd member ${who} is the only remaining member of the etcd cluster: not removing it`,
      "not-a-member": `[reset] The etcd member ${who} was already removed from the etcd cluster`,
    };
    ctx.log.info(lines[outcome]);
  } catch (e) {
    ctx.log.warn(
      `[reset] Failed to remove etcd member: ${messageOf(e)}, please manually remove this etcd member using etcdctl`,
    );
  }
}

export const removeEtcdMemberPhase: Phase<ResetData> = {
  name: "remove-etcd-member",
  short: "Remove a local etcd member.",
  run: async (data, ctx) => {
    const text = await readFileIfExists(data.host, ETCD_MANIFEST);
    const where = locateEtcdData(
      data.clusterConfiguration,
      text === undefined ? undefined : { text: text.toString("utf8") },
    );
    if (where.kind === "external") {
      ctx.log.info(`[reset] No etcd config found. Assuming external etcd (${where.reason})`);
      ctx.log.info("[reset] Please, manually reset etcd to prevent further issues");
      return;
    }
    if (where.member && !data.removeEtcdMember) {
      ctx.log.info(
        "[reset] The whole cluster is being torn down: not removing this node's etcd member",
      );
    } else if (where.member) {
      await removeMember(data, where.member, ctx);
    }
    data.state.etcdDataDir = where.dataDir;
    if (await isDirEmpty(data.host, where.dataDir)) return;
    const what = `contents of the etcd data directory: ${where.dataDir}`;
    tell(ctx.log, data.wording.beforeDone("delete", what));
    try {
      await cleanDir(data.host, where.dataDir);
      tell(ctx.log, data.wording.after("delete", what));
    } catch (e) {
      ctx.log.warn(
        `[reset] Failed to delete contents of the etcd directory: "${where.dataDir}", error: ${messageOf(e)}`,
      );
    }
  },
};
