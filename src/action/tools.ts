import { mkdir, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ClusterSpec } from "../config/cluster/types.js";
import { releaseArtifacts } from "../node/artifacts/catalog.js";
import { artifactCacheDir, fetchArtifact } from "../node/artifacts/fetch.js";
import { writeRunnerFile } from "../remote/runner-files.js";
import { shellJoin } from "../remote/ssh/quote.js";

// The tools the action leaves on PATH for the job's later steps: `kubeforge` (the bundled CLI
// run by the Node that runs the action, so the join command and teardown hints it prints can be
// run as they are) and kubectl of the cluster's version (from the same verified, cached
// download node preparation uses: no second download when the runner is a node).

/** One folder per job for the tools; a later step's PATH gets it through core.addPath. */
export function toolsDir(env: NodeJS.ProcessEnv): string {
  return join(env.RUNNER_TEMP || tmpdir(), "kubeforge-bin");
}

/** The `kubeforge` command: this action's Node and dist/cli.js, every argument passed on. */
export function kubeforgeWrapper(node: string, cliJs: string): string {
  return `#!/bin/sh\n# kubeforge, as the kubeforge action runs it\nexec ${shellJoin([node, cliJs])} "$@"\n`;
}

export interface ToolsRequest {
  env: NodeJS.ProcessEnv;
  /** The bundled CLI next to the action's entry point. */
  cliPath: string;
  /** kubectl's version (exact); absent: kubectl is not installed. */
  kubernetesVersion?: string;
  /** Where kubectl is downloaded from (the Cluster's prepare.downloads). */
  spec: Pick<ClusterSpec, "prepare">;
  log: (line: string) => void;
}

/**
 * kubectl's version skew policy (kubernetes.io/releases/version-skew-policy, "kubectl"): kubectl
 * is supported within one minor version, older or newer, of kube-apiserver. Outside it, a
 * warning; undefined within it.
 */
export function kubectlSkewWarning(kubectl: string, apiServer: string): string | undefined {
  const minor = (v: string) => Number(/^v?1\.(\d+)\./.exec(v)?.[1] ?? NaN);
  const skew = minor(kubectl) - minor(apiServer);
  if (!Number.isFinite(skew) || Math.abs(skew) <= 1) return undefined;
  return `input kubectl-version: kubectl ${kubectl} is ${Math.abs(skew)} minor versions ${skew > 0 ? "newer" : "older"} than the API server (${apiServer}); kubectl is supported within one minor version of it`;
}

/** Writes the tools into toolsDir and returns it (the caller adds it to PATH). */
export async function installTools(req: ToolsRequest): Promise<string> {
  const dir = toolsDir(req.env);
  await mkdir(dir, { recursive: true, mode: 0o755 });
  await writeRunnerFile(
    join(dir, "kubeforge"),
    kubeforgeWrapper(process.execPath, req.cliPath),
    0o755,
  );
  if (req.kubernetesVersion !== undefined) {
    const kubectl = releaseArtifacts(
      req.kubernetesVersion,
      process.arch,
      req.spec.prepare.downloads,
    ).find((a) => a.name === "kubectl")!;
    const fetched = await fetchArtifact(kubectl, {
      cacheDir: artifactCacheDir(req.env),
      log: (line) => req.log(`[tools] ${line}`),
    });
    await writeRunnerFile(join(dir, "kubectl"), await readFile(fetched.path), 0o755);
  }
  req.log(
    `[tools] on PATH for the next steps: ${dir}/kubeforge${req.kubernetesVersion ? `, ${dir}/kubectl ${req.kubernetesVersion}` : ""}`,
  );
  return dir;
}
