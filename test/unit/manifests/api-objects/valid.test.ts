import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../../../src/kube/types.js";
import { kubectlReadBack, kubectlTypedBinding, kubectlTypedKind } from "./kubectl.js";
import { strictSchemaProblems } from "./schema.js";

// The checks every API object test relies on must themselves catch what they claim to.

const secret = (extra: Record<string, unknown>): KubeObject => ({
  apiVersion: "v1",
  kind: "Secret",
  metadata: { name: "s", namespace: "kube-system" },
  data: { a: "YWJj" },
  ...extra,
});

describe("the object checks", () => {
  it("strict schema: flags unknown fields, wrong types and bad base64", () => {
    expect(strictSchemaProblems(secret({}))).toEqual([]);
    expect(strictSchemaProblems(secret({ bogus: 1 }))).toEqual(["bogus: unknown field"]);
    expect(strictSchemaProblems(secret({ data: { a: "!!" } }))).toEqual(["data.a: not base64"]);
    const binding: KubeObject = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: "b", namespace: "x" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "r" },
      subjects: [{ kind: "Group", name: "g", group: "typo" }],
    };
    expect(strictSchemaProblems(binding)).toEqual(["subjects[0].group: unknown field"]);
  });

  it("kubectl's typed decoder refuses bad base64 and YAML 1.1 traps", async () => {
    expect(await kubectlTypedKind(secret({}))).toBe("*v1.Secret");
    await expect(kubectlTypedKind(secret({ data: { a: "!!" } }))).rejects.toThrow(/illegal base64/);
    // "n" written unquoted would be YAML 1.1 false; our writer quotes it, so it stays a name.
    const node: KubeObject = { apiVersion: "v1", kind: "Node", metadata: { name: "n" } };
    expect(await kubectlTypedKind(node)).toBe("*v1.Node");
    expect((await kubectlReadBack(node)).metadata.name).toBe("n");
  });

  it("kubectl's typed binding loses fields its Go type does not know", async () => {
    const binding: KubeObject = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: "b" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "r" },
      subjects: [{ kind: "Group", name: "g", bogus: "x" }],
    };
    const back = await kubectlTypedBinding(binding);
    expect(back).not.toEqual(binding);
    expect(back["subjects"]).toEqual([{ kind: "Group", name: "g" }]);
  });
});
