import { describe, expect, it } from "vitest";
import { ApiError } from "../../../../src/kube/errors.js";
import type {
  ClusterAccess,
  KubeClient,
  KubeObject,
  ObjectRef,
} from "../../../../src/kube/types.js";
import { addonPhase } from "../../../../src/phases/init/addons.js";
import { uploadConfigPhase } from "../../../../src/phases/init/upload-config.js";
import { LocalHost } from "../../../../src/remote/local.js";
import { recordingLogger, runPhase, testInitData } from "../../../support/init-fixtures.js";

// Which of init's (and upgrade's) API writes wait for which. kubeadm writes one object after
// another; kubeforge writes at once those no other waits on, and keeps the orders that matter:
// CoreDNS's Corefile (its ConfigMap) before the Deployment whose Pods mount it
// (phases/addons/dns createCoreDNSAddon, v1.35). Each call here takes 20 ms, so calls made at
// once overlap and calls made in turn do not.

type Event = { at: "start" | "end"; call: string };

/** A cluster where nothing exists yet; every call is recorded when it starts and ends. */
function recordingCluster(): { api: ClusterAccess; events: Event[] } {
  const events: Event[] = [];
  const timed = async <T>(call: string, answer: () => T): Promise<T> => {
    events.push({ at: "start", call });
    await new Promise((r) => setTimeout(r, 20));
    events.push({ at: "end", call });
    return answer();
  };
  const client = {
    description: "/etc/kubernetes/admin.conf",
    create: <T extends KubeObject>(obj: T) =>
      timed(`create ${obj.kind}/${obj.metadata.name}`, () => obj),
    get: (ref: ObjectRef) =>
      timed(`get ${ref.kind}/${ref.name}`, () => {
        throw new ApiError({
          operation: { verb: "get", kind: ref.kind, name: ref.name },
          code: 404,
          reason: "NotFound",
          statusMessage: `${ref.kind} "${ref.name}" not found`,
        });
      }),
    list: (_apiVersion: string, kind: string) => timed(`list ${kind}`, () => []),
  } as unknown as KubeClient;
  return {
    api: {
      clientFor: () => Promise.resolve(client),
      probe: () => Promise.reject(new Error("unused")),
    },
    events,
  };
}

const when = (events: Event[], at: Event["at"], call: string): number => {
  const i = events.findIndex((e) => e.at === at && e.call === call);
  if (i < 0) throw new Error(`no ${at} of ${call} in ${JSON.stringify(events)}`);
  return i;
};

describe("init's API writes", () => {
  it("upload-config: the ConfigMap and the Role and RoleBinding that name it, at once", async () => {
    for (const [sub, configMap, rbac] of [
      ["kubeadm", "kubeadm-config", "kubeadm:nodes-kubeadm-config"],
      ["kubelet", "kubelet-config", "kubeadm:kubelet-config"],
    ] as const) {
      const { api, events } = recordingCluster();
      await runPhase(
        uploadConfigPhase,
        testInitData(new LocalHost(), undefined, undefined, { api }),
        recordingLogger(),
        sub,
      );
      const written = when(events, "end", `create ConfigMap/${configMap}`);
      expect(when(events, "start", `create Role/${rbac}`)).toBeLessThan(written);
      expect(when(events, "start", `create RoleBinding/${rbac}`)).toBeLessThan(written);
    }
  });

  it("addon/coredns: the Corefile before the Deployment, the RBAC beside it, the Service beside the Deployment", async () => {
    const { api, events } = recordingCluster();
    await runPhase(
      addonPhase,
      testInitData(new LocalHost(), undefined, undefined, { api }),
      recordingLogger(),
      "coredns",
    );
    const corefile = when(events, "end", "create ConfigMap/coredns");
    const deployment = when(events, "start", "create Deployment/coredns");
    expect(deployment).toBeGreaterThan(corefile);
    expect(when(events, "start", "create ClusterRole/system:coredns")).toBeLessThan(corefile);
    expect(when(events, "start", "create ServiceAccount/coredns")).toBeLessThan(corefile);
    expect(when(events, "start", "create Service/kube-dns")).toBeLessThan(
      when(events, "end", "create Deployment/coredns"),
    );
    // Both reads before any write: the running Deployments' replicas, the ConfigMap's Corefile.
    expect(when(events, "start", "get ConfigMap/coredns")).toBeLessThan(
      when(events, "end", "list Deployment"),
    );
  });
});
