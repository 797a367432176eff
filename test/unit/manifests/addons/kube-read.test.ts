import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../../../src/kube/types.js";
import { kubectlRead, schemaProblems } from "./kube-read.js";

// The read-back the addon tests rely on must be able to fail.
describe("reading objects back as Kubernetes does", () => {
  const deployment = (spec: Record<string, unknown>): KubeObject => ({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "x", namespace: "kube-system" },
    spec,
  });

  it("reports unknown fields and wrong types with their path", () => {
    expect(
      schemaProblems(
        deployment({
          replicas: "two",
          bogus: 1,
          template: { spec: { containers: [{ name: "c", ports: [{ containerPort: 1.5 }] }] } },
        }),
      ),
    ).toEqual([
      "Deployment.spec.replicas: expected a number",
      "Deployment.spec.bogus: unknown field",
      "Deployment.spec.template.spec.containers[0].ports[0].containerPort: expected an integer",
    ]);
    expect(schemaProblems({ apiVersion: "v1", kind: "Endpoints" })).toEqual([
      "no schema known for v1/Endpoints",
    ]);
  });

  it("accepts an IntOrString as either and a well-formed object as it is", () => {
    const ok = deployment({
      selector: { matchLabels: { a: "b" } },
      template: {
        spec: {
          containers: [
            {
              name: "c",
              livenessProbe: { httpGet: { port: "p" } },
              readinessProbe: { httpGet: { port: 8 } },
            },
          ],
        },
      },
    });
    expect(schemaProblems(ok)).toEqual([]);
  });

  it("returns what kubectl decoded, YAML 1.1 traps included", () => {
    const cm: KubeObject = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { name: "traps", namespace: "kube-system", labels: { keep: "yes" } },
      data: { on: "yes", octal: "0644", empty: "" },
    };
    expect(kubectlRead([cm, cm])).toEqual([cm, cm]);
  });
});
