import { describe, expect, it } from "vitest";
import {
  KUBELET_CONFIGURATION_SCHEMA,
  POD_SCHEMA,
  strategicMergePatch,
  type JSONMap,
} from "../../../src/manifests/strategic-merge.js";

// Expected results follow k8s.io/apimachinery strategicpatch semantics: merge lists by their
// patchMergeKey, new list items are placed before the live items that follow them in the
// patch order (normalizeElementOrder), other lists are replaced, null deletes.

function pod(containers: JSONMap[], extra: JSONMap = {}): JSONMap {
  return { apiVersion: "v1", kind: "Pod", metadata: { name: "p" }, spec: { containers, ...extra } };
}

function names(result: JSONMap): string[] {
  return ((result.spec as JSONMap).containers as JSONMap[]).map((c) => c.name as string);
}

describe("strategic merge patch over a Pod", () => {
  it("merges containers by name and their env by name", () => {
    const original = pod([
      {
        name: "a",
        image: "a:1",
        env: [
          { name: "X", value: "1" },
          { name: "Y", value: "2" },
        ],
      },
    ]);
    const result = strategicMergePatch(
      original,
      {
        spec: {
          containers: [
            {
              name: "a",
              env: [
                { name: "Y", value: "changed" },
                { name: "Z", value: "3" },
              ],
            },
          ],
        },
      },
      POD_SCHEMA,
    );
    const c = ((result.spec as JSONMap).containers as JSONMap[])[0]!;
    expect(c.image).toBe("a:1");
    expect(c.env).toEqual([
      { name: "X", value: "1" },
      { name: "Y", value: "changed" },
      { name: "Z", value: "3" },
    ]);
    // The input is left alone.
    expect(((original.spec as JSONMap).containers as JSONMap[])[0]!.env).toHaveLength(2);
  });

  it("puts a new item first when the patch names no live item before it", () => {
    const result = strategicMergePatch(
      pod([{ name: "a" }, { name: "b" }]),
      { spec: { containers: [{ name: "c" }] } },
      POD_SCHEMA,
    );
    expect(names(result)).toEqual(["c", "a", "b"]);
  });

  it("keeps live order and slots new items after the patched ones", () => {
    const result = strategicMergePatch(
      pod([{ name: "a" }, { name: "b" }, { name: "c" }]),
      { spec: { containers: [{ name: "b", image: "x" }, { name: "d" }] } },
      POD_SCHEMA,
    );
    expect(names(result)).toEqual(["a", "b", "d", "c"]);
  });

  it("merges volumeMounts by mountPath and ports by containerPort", () => {
    const result = strategicMergePatch(
      pod([
        {
          name: "a",
          ports: [{ name: "probe-port", containerPort: 6443, protocol: "TCP" }],
          volumeMounts: [{ name: "x", mountPath: "/x", readOnly: true }],
        },
      ]),
      {
        spec: {
          containers: [
            {
              name: "a",
              ports: [{ containerPort: 6443, hostPort: 6443 }],
              volumeMounts: [
                { name: "renamed", mountPath: "/x" },
                { name: "y", mountPath: "/y" },
              ],
            },
          ],
        },
      },
      POD_SCHEMA,
    );
    const c = ((result.spec as JSONMap).containers as JSONMap[])[0]!;
    expect(c.ports).toEqual([
      { name: "probe-port", containerPort: 6443, protocol: "TCP", hostPort: 6443 },
    ]);
    expect(c.volumeMounts).toEqual([
      { name: "renamed", mountPath: "/x", readOnly: true },
      { name: "y", mountPath: "/y" },
    ]);
  });

  it("replaces lists without a patch strategy (tolerations, command)", () => {
    const result = strategicMergePatch(
      pod([{ name: "a", command: ["x", "--a=1"] }], { tolerations: [{ operator: "Exists" }] }),
      {
        spec: {
          tolerations: [{ key: "k", operator: "Equal", value: "v" }],
          containers: [{ name: "a", command: ["x", "--b=2"] }],
        },
      },
      POD_SCHEMA,
    );
    expect((result.spec as JSONMap).tolerations).toEqual([
      { key: "k", operator: "Equal", value: "v" },
    ]);
    expect(((result.spec as JSONMap).containers as JSONMap[])[0]!.command).toEqual(["x", "--b=2"]);
  });

  it("deletes a list item with $patch: delete and replaces a list with $patch: replace", () => {
    const original = pod([{ name: "a" }, { name: "b" }], {
      volumes: [{ name: "v1" }, { name: "v2" }],
    });
    const deleted = strategicMergePatch(
      original,
      { spec: { containers: [{ name: "a", $patch: "delete" }] } },
      POD_SCHEMA,
    );
    expect(names(deleted)).toEqual(["b"]);
    const replaced = strategicMergePatch(
      original,
      { spec: { volumes: [{ name: "only" }, { $patch: "replace" }] } },
      POD_SCHEMA,
    );
    expect((replaced.spec as JSONMap).volumes).toEqual([{ name: "only" }]);
  });

  it("handles $patch on maps and null on fields", () => {
    const original = pod(
      [{ name: "a", resources: { requests: { cpu: "250m" }, limits: { cpu: "1" } } }],
      {
        securityContext: { seccompProfile: { type: "RuntimeDefault" }, runAsUser: 0 },
        hostNetwork: true,
      },
    );
    const result = strategicMergePatch(
      original,
      {
        spec: {
          securityContext: { $patch: "replace", runAsNonRoot: true },
          hostNetwork: null,
          containers: [{ name: "a", resources: { limits: { $patch: "delete" } } }],
        },
      },
      POD_SCHEMA,
    );
    const spec = result.spec as JSONMap;
    expect(spec.securityContext).toEqual({ runAsNonRoot: true });
    expect("hostNetwork" in spec).toBe(false);
    // kubeadm's library leaves an empty map for a deleted map.
    expect((spec.containers as JSONMap[])[0]!.resources).toEqual({
      requests: { cpu: "250m" },
      limits: {},
    });
  });

  it("treats finalizers as a set and honours $deleteFromPrimitiveList", () => {
    const original: JSONMap = { metadata: { name: "p", finalizers: ["a", "b"] } };
    expect(
      (
        strategicMergePatch(original, { metadata: { finalizers: ["b", "c"] } }, POD_SCHEMA)
          .metadata as JSONMap
      ).finalizers,
    ).toEqual(["a", "b", "c"]);
    expect(
      (
        strategicMergePatch(
          original,
          { metadata: { "$deleteFromPrimitiveList/finalizers": ["a"] } },
          POD_SCHEMA,
        ).metadata as JSONMap
      ).finalizers,
    ).toEqual(["b"]);
  });

  it("clears unlisted fields with $retainKeys", () => {
    const result = strategicMergePatch(
      pod([], { volumes: [{ name: "v", hostPath: { path: "/x" } }] }),
      { spec: { volumes: [{ name: "v", $retainKeys: ["name", "emptyDir"], emptyDir: {} }] } },
      POD_SCHEMA,
    );
    expect((result.spec as JSONMap).volumes).toEqual([{ name: "v", emptyDir: {} }]);
  });

  it("orders a list by $setElementOrder", () => {
    const result = strategicMergePatch(
      pod([{ name: "a" }, { name: "b" }, { name: "c" }]),
      {
        spec: {
          "$setElementOrder/containers": [{ name: "c" }, { name: "a" }, { name: "b" }],
          containers: [{ name: "a", image: "x" }],
        },
      },
      POD_SCHEMA,
    );
    expect(names(result)).toEqual(["c", "a", "b"]);
    expect(((result.spec as JSONMap).containers as JSONMap[])[1]!.image).toBe("x");
  });

  it("replaces a value of another type", () => {
    const result = strategicMergePatch(
      pod([{ name: "a", args: ["x"] }]),
      { spec: { containers: [{ name: "a", args: "y" }] } },
      POD_SCHEMA,
    );
    expect(((result.spec as JSONMap).containers as JSONMap[])[0]!.args).toBe("y");
  });

  it("merges maps recursively in a KubeletConfiguration and replaces its lists", () => {
    const result = strategicMergePatch(
      {
        authentication: { anonymous: { enabled: false }, webhook: { enabled: true } },
        clusterDNS: ["10.96.0.10"],
      },
      { authentication: { webhook: { cacheTTL: "2m0s" } }, clusterDNS: ["169.254.20.10"] },
      KUBELET_CONFIGURATION_SCHEMA,
    );
    expect(result).toEqual({
      authentication: {
        anonymous: { enabled: false },
        webhook: { enabled: true, cacheTTL: "2m0s" },
      },
      clusterDNS: ["169.254.20.10"],
    });
  });

  it("rejects malformed patches with one sentence", () => {
    expect(() => strategicMergePatch(pod([]), ["not", "a", "map"], POD_SCHEMA)).toThrow(
      /must be a JSON object/,
    );
    expect(() =>
      strategicMergePatch(
        pod([{ name: "a" }]),
        { spec: { containers: [{ image: "no-name" }] } },
        POD_SCHEMA,
      ),
    ).toThrow(/merge key "name"/);
    expect(() => strategicMergePatch(pod([]), { spec: { $patch: "explode" } }, POD_SCHEMA)).toThrow(
      /unexpected patch directive/,
    );
  });
});
