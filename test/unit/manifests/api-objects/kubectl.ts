import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { toYAML } from "../../../../src/config/yaml.js";
import type { KubeObject } from "../../../../src/kube/types.js";

// Reading objects back with real kubectl, offline (no cluster: KUBECONFIG points nowhere).
// - `kubectl label --local -f FILE k=v -o json` parses the YAML with Kubernetes' own reader
//   (YAML 1.1 scalars) into an unstructured object: what we wrote must come back unchanged.
// - `kubectl set env --local` and `kubectl set subject --local` first decode the file into
//   the typed Go object (k8s.io/api), so a wrong JSON type or bad base64 fails there with
//   "unable to decode"; `set subject` then prints the typed object, which has lost any field
//   the Go type does not know.

const run = promisify(execFile);
const ENV = { ...process.env, KUBECONFIG: "/dev/null" };

async function withFile<T>(
  content: KubeObject | string,
  fn: (path: string) => Promise<T>,
): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), "kubeforge-api-objects-"));
  try {
    const path = join(dir, "object.yaml");
    await writeFile(path, typeof content === "string" ? content : toYAML(content));
    return await fn(path);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * A YAML document with apiVersion and kind (any kind, even one kubectl does not know, such as
 * kubeadm's ClusterConfiguration), as kubectl reads it; without the `metadata` kubectl adds.
 */
export async function kubectlReadYAML(text: string): Promise<Record<string, unknown>> {
  const back = (await kubectlReadBack(text)) as Partial<KubeObject>;
  if (back.metadata && Object.keys(back.metadata).length === 0) delete back.metadata;
  return back;
}

/** The object as kubectl reads the YAML we write for it, without the probe label. */
export async function kubectlReadBack(obj: KubeObject | string): Promise<KubeObject> {
  return withFile(obj, async (path) => {
    const { stdout } = await run(
      "kubectl",
      ["label", "--local", "-f", path, "kubeforge-check=1", "-o", "json"],
      { env: ENV },
    );
    const back = JSON.parse(stdout) as KubeObject;
    const labels = back.metadata.labels!;
    if (labels["kubeforge-check"] !== "1") throw new Error("kubectl lost the probe label");
    delete labels["kubeforge-check"];
    if (Object.keys(labels).length === 0) delete back.metadata.labels;
    return back;
  });
}

/**
 * The Go type kubectl decoded the object into ("*v1.Secret"), proven by `set env` getting past
 * decoding to complain that it is not a pod. Throws kubectl's message when decoding fails.
 */
export async function kubectlTypedKind(obj: KubeObject): Promise<string> {
  return withFile(obj, async (path) => {
    try {
      await run("kubectl", ["set", "env", "--local", "-f", path, "KUBEFORGE=1", "-o", "json"], {
        env: ENV,
      });
    } catch (e) {
      const stderr = (e as { stderr?: string }).stderr ?? String(e);
      const m = /does not have a pod template: (\*v1\.\w+)/.exec(stderr);
      if (m) return m[1]!;
      throw new Error(stderr.trim(), { cause: e });
    }
    throw new Error("kubectl set env unexpectedly accepted the object");
  });
}

/**
 * A RoleBinding or ClusterRoleBinding as the typed Go object prints it (unknown fields gone),
 * with the subject `set subject` had to add removed again.
 */
export async function kubectlTypedBinding(obj: KubeObject): Promise<KubeObject> {
  return withFile(obj, async (path) => {
    const { stdout } = await run(
      "kubectl",
      ["set", "subject", "--local", "-f", path, "--user=kubeforge-probe", "-o", "json"],
      { env: ENV },
    );
    const back = JSON.parse(stdout) as KubeObject & { subjects: { name: string }[] };
    back.subjects = back.subjects.filter((s) => s.name !== "kubeforge-probe");
    if (back.metadata.creationTimestamp === null) delete back.metadata.creationTimestamp;
    return back;
  });
}
