import { describe, expect, it } from "vitest";
import { parseYAMLDocuments } from "../../../../src/config/yaml.js";
import type { KubeObject } from "../../../../src/kube/types.js";
import { localPathStorageObjects } from "../../../../src/manifests/addons/local-path.js";
import { kubectlRead, schemaProblems } from "./kube-read.js";

// The default StorageClass's objects: read back by kubectl (Kubernetes' own YAML reader,
// offline) as they were built and valid against the API schema, and carrying the values of
// rancher/local-path-provisioner's deploy/local-path-storage.yaml at v0.0.37 (commit 49b2be8e),
// where the values below come from.

const objects = localPathStorageObjects();
const find = (kind: string, name?: string) =>
  objects.find((o) => o.kind === kind && (name === undefined || o.metadata.name === name))!;

describe("the local-path provisioner's objects", () => {
  it("read back by kubectl exactly as built, each valid against the API schema", () => {
    expect(kubectlRead(objects)).toEqual(objects);
    for (const o of objects) expect(schemaProblems(o), `${o.kind} ${o.metadata.name}`).toEqual([]);
  });

  it("are upstream's objects, in an order that applies (the namespace first)", () => {
    expect(
      objects.map((o) => `${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`),
    ).toEqual([
      "Namespace//local-path-storage",
      "ServiceAccount/local-path-storage/local-path-provisioner-service-account",
      "Role/local-path-storage/local-path-provisioner-role",
      "ClusterRole//local-path-provisioner-role",
      "RoleBinding/local-path-storage/local-path-provisioner-bind",
      "ClusterRoleBinding//local-path-provisioner-bind",
      "Deployment/local-path-storage/local-path-provisioner",
      "StorageClass//local-path",
      "ConfigMap/local-path-storage/local-path-config",
    ]);
  });

  it("the default StorageClass, binding when a pod needs the volume", () => {
    const sc = find("StorageClass");
    expect(sc.metadata.annotations).toEqual({
      "storageclass.kubernetes.io/is-default-class": "true",
    });
    expect(sc).toMatchObject({
      provisioner: "rancher.io/local-path",
      volumeBindingMode: "WaitForFirstConsumer",
      reclaimPolicy: "Delete",
    });
  });

  it("runs upstream's image and command, reading its configuration from the ConfigMap", () => {
    const pod = (find("Deployment").spec as { template: { spec: Record<string, unknown> } })
      .template.spec as {
      serviceAccountName: string;
      containers: { image: string; command: string[]; env: { name: string }[] }[];
      volumes: { configMap: { name: string } }[];
    };
    expect(pod.serviceAccountName).toBe("local-path-provisioner-service-account");
    expect(pod.containers[0]!.image).toBe("docker.io/rancher/local-path-provisioner:v0.0.37");
    expect(pod.containers[0]!.command).toEqual([
      "local-path-provisioner",
      "--debug",
      "start",
      "--config",
      "/etc/config/config.json",
    ]);
    expect(pod.containers[0]!.env.map((e) => e.name)).toEqual([
      "POD_NAMESPACE",
      "CONFIG_MOUNT_PATH",
      "HEALTH_PORT",
    ]);
    expect(pod.volumes[0]!.configMap.name).toBe("local-path-config");
  });

  it("keeps volumes under /opt/local-path-provisioner, with a helper pod Kubernetes reads", () => {
    const data = find("ConfigMap").data as Record<string, string>;
    expect(JSON.parse(data["config.json"]!)).toEqual({
      nodePathMap: [
        { node: "DEFAULT_PATH_FOR_NON_LISTED_NODES", paths: ["/opt/local-path-provisioner"] },
      ],
    });
    expect(data.setup).toBe('#!/bin/sh\nset -eu\nmkdir -m 0777 -p "$VOL_DIR"');
    expect(data.teardown).toBe('#!/bin/sh\nset -eu\nrm -rf "$VOL_DIR"');
    // The provisioner reads helperPod.yaml as a Pod: it must be one for Kubernetes too.
    const helper = parseYAMLDocuments(data["helperPod.yaml"]!, "helperPod.yaml")[0] as KubeObject;
    const [read] = kubectlRead([helper]);
    expect(schemaProblems(read)).toEqual([]);
    expect(read).toMatchObject({
      kind: "Pod",
      spec: {
        priorityClassName: "system-node-critical",
        containers: [{ name: "helper-pod", image: "docker.io/library/busybox:1.36" }],
      },
    });
  });

  it("a ClusterRole that may write PersistentVolumes and read what the provisioner watches", () => {
    expect(find("ClusterRole").rules).toEqual([
      {
        apiGroups: [""],
        resources: ["nodes", "persistentvolumeclaims", "configmaps", "pods", "pods/log"],
        verbs: ["get", "list", "watch"],
      },
      {
        apiGroups: [""],
        resources: ["persistentvolumes"],
        verbs: ["get", "list", "watch", "create", "patch", "update", "delete"],
      },
      { apiGroups: [""], resources: ["events"], verbs: ["create", "patch"] },
      {
        apiGroups: ["storage.k8s.io"],
        resources: ["storageclasses"],
        verbs: ["get", "list", "watch"],
      },
    ]);
  });
});
