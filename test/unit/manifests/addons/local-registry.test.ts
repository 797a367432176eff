import { load } from "js-yaml";
import { describe, expect, it } from "vitest";
import {
  LOCAL_REGISTRY_HELP,
  localRegistryHostingConfigMap,
} from "../../../../src/manifests/addons/local-registry.js";
import { kubectlRead, schemaProblems } from "./kube-read.js";

// KEP-1755 (kubernetes/enhancements keps/sig-cluster-lifecycle/generic/1755-communicating-a-
// local-registry): a ConfigMap named local-registry-hosting in kube-public whose key
// localRegistryHosting.v1 holds a YAML document with `host` (the registry's address from outside
// the cluster) and `help` (a page for humans); kind's "Local Registry" recipe writes exactly this
// shape (host: "localhost:5001", help: its docs page).

describe("the local-registry-hosting ConfigMap (KEP-1755)", () => {
  const cm = localRegistryHostingConfigMap({ host: "localhost:5001" });

  it("is named and placed as the KEP says, read back by kubectl, valid against the schema", () => {
    expect(cm.metadata).toEqual({ name: "local-registry-hosting", namespace: "kube-public" });
    expect(kubectlRead([cm])).toEqual([cm]);
    expect(schemaProblems(cm)).toEqual([]);
  });

  it("holds LocalRegistryHostingV1 as YAML: the host images are named by, and help", () => {
    const data = cm.data as Record<string, string>;
    expect(Object.keys(data)).toEqual(["localRegistryHosting.v1"]);
    expect(load(data["localRegistryHosting.v1"]!)).toEqual({
      host: "localhost:5001",
      help: LOCAL_REGISTRY_HELP,
    });
    // Quoted as kind's recipe writes it.
    expect(data["localRegistryHosting.v1"]).toBe(
      `host: "localhost:5001"\nhelp: "${LOCAL_REGISTRY_HELP}"\n`,
    );
    // A host that YAML could read as something else stays text.
    const odd = localRegistryHostingConfigMap({ host: "10.0.0.1:5001", help: "https://x" });
    expect(load((odd.data as Record<string, string>)["localRegistryHosting.v1"]!)).toEqual({
      host: "10.0.0.1:5001",
      help: "https://x",
    });
  });
});
