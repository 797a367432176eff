import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { caPinsOf } from "../../kubeconfig/ca-pins.js";
import { parseKubeConfig } from "../../kubeconfig/parse.js";
import { prepareInit } from "../init.js";
import { requireEmptyRenderFolder } from "../render-folder.js";
import type { NodeRun } from "./node-workflows.js";

// `up --dry-run` renders the first control plane's init the way `kubeforge init --dry-run` does
// (the same prepareInit and phases, in dry-run mode): certificates and keys, kubeconfigs
// (admin.conf among them), static pod manifests and the kubelet's files are written under a
// folder on the runner, commands that would change the node are reported and API writes are
// recorded, not sent. Nothing on the node changes: DryRunHost runs only read-only commands
// there. The action reads its outputs (admin.conf, the CA hash) from these files.
//
// Two phases are left out: preflight, because a dry run comes before node preparation (a fresh
// VM has no kubelet or container runtime yet, and `up` checks every host once it prepares them);
// and show-join-command, whose message would print the join command again.

/** Phases the rendering skips (see above), with the user's own skipPhases. */
const NOT_RENDERED = ["preflight", "show-join-command"];

export interface RenderedInit {
  /** The rendered admin.conf, on the runner. */
  adminConfPath: string;
  /** The pins of the rendered cluster CAs, taken from admin.conf as a real run takes them. */
  caCertHashes: string[];
}

/**
 * Renders the first control plane's init into `dir` (a root folder: `dir`/etc/kubernetes/...),
 * which must be absent or empty: nothing of anyone else's is overwritten, and no file of an
 * earlier rendering is mistaken for this one's. The recorded API writes are dropped: they hold
 * the bootstrap token's Secret.
 */
export async function renderInitDryRun(
  run: NodeRun,
  dir: string,
  opts: { uploadCerts: boolean },
): Promise<RenderedInit> {
  await requireEmptyRenderFolder(dir, "the init");
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const prepared = await prepareInit({
    config: { text: run.documents, source: `the kubeadm configuration of ${run.host.name}` },
    host: run.host,
    dryRun: true,
    dryRunDir: dir,
    reporter: run.reporter,
    env: run.env,
    stdout: () => {},
    flags: { uploadCerts: opts.uploadCerts },
    ...(run.now ? { now: run.now } : {}),
  });
  try {
    await prepared.runner.run(prepared.data, {
      skipPhases: [...new Set([...prepared.skipPhases, ...NOT_RENDERED])],
    });
  } finally {
    prepared.data.keys.discard();
  }
  const adminConfPath = join(dir, "etc/kubernetes/admin.conf");
  const adminConf = parseKubeConfig(await readFile(adminConfPath), adminConfPath);
  return { adminConfPath, caCertHashes: caPinsOf(adminConf, adminConfPath) };
}
