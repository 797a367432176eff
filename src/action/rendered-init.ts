import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { joinCommand as formatJoinCommand } from "../manifests/join-command.js";
import { caCertHash } from "../pki/pin.js";

// A dry run's outputs from the files `up --dry-run` rendered for the first control plane's init
// (cluster/up/render-init.ts): the rendered admin.conf, the hash of the rendered CA, and the
// worker join command these would give with this run's token. No cluster exists: they show
// what a real run would hand over, and admin.conf names an API server that is not there.

export interface RenderedInit {
  /** The rendered admin.conf on the runner. */
  kubeconfig: string;
  adminConf: string;
  caCertHash: string;
  /** The worker join command (with the token): a secret. */
  joinCommand: string;
}

/** Where the first control plane's init is rendered: its own folder beside its plan. */
export function renderDirOf(planDir: string, node: string): string {
  return join(planDir, node);
}

/**
 * Reads the rendering under `dir` (a root folder); undefined when nothing was rendered (the
 * first control plane had finished init earlier: there was no init to render).
 */
export async function readRenderedInit(
  dir: string,
  cluster: { apiServer: string; token: string },
): Promise<RenderedInit | undefined> {
  const kubeconfig = join(dir, "etc/kubernetes/admin.conf");
  let adminConf: string;
  try {
    adminConf = await readFile(kubeconfig, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new Error(`cannot read the rendered ${kubeconfig}: ${(e as Error).message}`, {
      cause: e,
    });
  }
  const hash = caCertHash(await readFile(join(dir, "etc/kubernetes/pki/ca.crt")));
  const joinCommand = formatJoinCommand({
    program: "kubeforge",
    server: cluster.apiServer.replace(/^https:\/\//, ""),
    token: cluster.token,
    caCertHashes: [hash],
    controlPlane: false,
    skipTokenPrint: false,
    skipCertificateKeyPrint: false,
  })
    .replace(/\\\n\t/g, "")
    .trim();
  return { kubeconfig, adminConf, caCertHash: hash, joinCommand };
}
