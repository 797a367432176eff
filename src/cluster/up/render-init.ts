import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { caPinsOf } from "../../kubeconfig/ca-pins.js";
import { parseKubeConfig } from "../../kubeconfig/parse.js";
import { requireEmptyRenderFolder } from "../render-folder.js";

// `up --dry-run` renders the first control plane's init the way `kubeforge init --dry-run` does
// (the same prepareInit and phases, in dry-run mode): certificates and keys, kubeconfigs
// (admin.conf among them), static pod manifests and the kubelet's files are written under a
// folder on the runner, commands that would change the node are reported and API writes are
// recorded, not sent. Nothing on the node changes: DryRunHost runs only read-only commands
// there. The action reads its outputs (admin.conf, the CA hash) from these files.
//
// Two phases are left out: preflight, because a dry run comes before node preparation (a fresh
// VM has no kubelet or container runtime yet, and `up` checks every host once it prepares them);
// and show-join-command, whose message would print the join command again. The recorded API
// writes are dropped: they hold the bootstrap token's Secret.

/** Init phases the rendering skips (see above), beside the user's own skipPhases. */
export const NOT_RENDERED = ["preflight", "show-join-command"];

export interface RenderedInit {
  /** The rendered admin.conf, on the runner. */
  adminConfPath: string;
  /** The pins of the rendered cluster CAs, taken from admin.conf as a real run takes them. */
  caCertHashes: string[];
}

/**
 * Makes `dir` (a root folder: `dir`/etc/kubernetes/...) ready for a rendering. It must be absent
 * or empty: nothing of anyone else's is overwritten, and no file of an earlier rendering is
 * mistaken for this one's.
 */
export async function claimRenderFolder(dir: string): Promise<void> {
  await requireEmptyRenderFolder(dir, "the init");
  await mkdir(dir, { recursive: true, mode: 0o700 });
}

/** What a finished rendering in `dir` hands out: its admin.conf and the CA pins in it. */
export async function renderedInit(dir: string): Promise<RenderedInit> {
  const adminConfPath = join(dir, "etc/kubernetes/admin.conf");
  const adminConf = parseKubeConfig(await readFile(adminConfPath), adminConfPath);
  return { adminConfPath, caCertHashes: caPinsOf(adminConf, adminConfPath) };
}
