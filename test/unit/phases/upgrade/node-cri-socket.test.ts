import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ApiError } from "../../../../src/kube/errors.js";
import type { KubeClient } from "../../../../src/kube/types.js";
import { nodeCRISocket } from "../../../../src/phases/upgrade/cluster-config.js";
import { LocalHost } from "../../../../src/remote/local.js";

// kubeadm's getNodeRegistration CRI socket (upgrade/node and the stage's image pull): the Node's
// kubeadm.alpha.kubernetes.io/cri-socket annotation while it has one, else the node's own kubelet
// files: /var/lib/kubelet/instance-config.yaml's containerRuntimeEndpoint, then the
// --container-runtime-endpoint of kubeadm-flags.env. The files are read while the Node is asked.

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "kubeforge-cri-socket-"));
  await mkdir(join(root, "var/lib/kubelet"), { recursive: true });
});
afterEach(() => rm(root, { recursive: true, force: true }));

const INSTANCE = "var/lib/kubelet/instance-config.yaml";
const FLAGS = "var/lib/kubelet/kubeadm-flags.env";

const nodeGet = (name: string, code: number): ApiError =>
  new ApiError({
    operation: { verb: "get", kind: "Node", name },
    code,
    reason: code === 404 ? "NotFound" : "InternalError",
    statusMessage: code === 404 ? `nodes "${name}" not found` : "etcdserver: request timed out",
  });

/** A client whose Node has `annotations`, or whose GET fails with `code`. */
function client(answer: { annotations?: Record<string, string> } | number): KubeClient {
  return {
    get: (ref: { name: string }) =>
      typeof answer === "number"
        ? Promise.reject(nodeGet(ref.name, answer))
        : Promise.resolve({
            apiVersion: "v1",
            kind: "Node",
            metadata: { name: ref.name, annotations: answer.annotations ?? {} },
          }),
  } as unknown as KubeClient;
}

const ask = (c: KubeClient) => nodeCRISocket(c, new LocalHost({ rootfs: root }), "w-1");

describe("nodeCRISocket", () => {
  it("takes the Node's annotation over the node's files", async () => {
    await writeFile(join(root, INSTANCE), "containerRuntimeEndpoint: unix:///from/instance\n");
    const annotated = client({
      annotations: { "kubeadm.alpha.kubernetes.io/cri-socket": "unix:///from/annotation" },
    });
    expect(await ask(annotated)).toBe("unix:///from/annotation");
  });

  it("takes the annotation even when the node's files cannot be read", async () => {
    await mkdir(join(root, INSTANCE)); // a folder where the file should be: reading it fails
    const annotated = client({
      annotations: { "kubeadm.alpha.kubernetes.io/cri-socket": "unix:///from/annotation" },
    });
    expect(await ask(annotated)).toBe("unix:///from/annotation");
    // Without it, the read's failure is the answer.
    await expect(ask(client({}))).rejects.toThrow(/EISDIR/);
  });

  it("without the annotation: instance-config.yaml, then kubeadm-flags.env, then nothing", async () => {
    const plain = client({});
    expect(await ask(plain)).toBeUndefined();
    await writeFile(
      join(root, FLAGS),
      'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=unix:///from/flags --pod-infra-container-image=x"\n',
    );
    expect(await ask(plain)).toBe("unix:///from/flags");
    await writeFile(join(root, INSTANCE), "containerRuntimeEndpoint: unix:///from/instance\n");
    expect(await ask(plain)).toBe("unix:///from/instance");
    // A Node not found is no error: the node's files answer.
    expect(await ask(client(404))).toBe("unix:///from/instance");
  });

  it("fails on any other error reading the Node, as kubeadm", async () => {
    await writeFile(join(root, INSTANCE), "containerRuntimeEndpoint: unix:///from/instance\n");
    await expect(ask(client(500))).rejects.toThrow(
      /^failed to get corresponding node: .*500 Internal Server Error/,
    );
  });
});
