import { expect } from "vitest";
import type { KubeObject } from "../../../../src/kube/types.js";
import { kubectlReadBack, kubectlTypedBinding, kubectlTypedKind } from "./kubectl.js";
import { strictSchemaProblems } from "./schema.js";

/**
 * Proves `obj` is a valid Kubernetes object as written: no unknown field or wrong type under
 * strict decoding, read back unchanged by kubectl's YAML reader, decoded by kubectl into the Go
 * type of its kind (for bindings: printed back unchanged by that Go type).
 */
export async function expectValidObject(obj: KubeObject): Promise<void> {
  expect(strictSchemaProblems(obj)).toEqual([]);
  expect(await kubectlReadBack(obj)).toEqual(obj);
  if (obj.kind === "RoleBinding" || obj.kind === "ClusterRoleBinding") {
    expect(await kubectlTypedBinding(obj)).toEqual(obj);
  } else {
    expect(await kubectlTypedKind(obj)).toBe(`*v1.${obj.kind}`);
  }
}
