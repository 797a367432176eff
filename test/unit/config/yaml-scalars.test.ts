import { describe, expect, it } from "vitest";
import { ConfigError, decodeConfigDocuments } from "../../../src/config/load.js";
import { validateConfigDocuments } from "../../../src/config/validate.js";

// kubeadm decodes its documents with the universal decoder: YAML becomes JSON without the
// target type (apimachinery runtime/serializer/json: yaml.YAMLToJSON), so an unquoted `yes`,
// `on`, `0644` or `1234` in a string field is a JSON boolean or number and decoding fails
// ("json: cannot unmarshal bool into Go struct field ... of type string").

const V4 = "apiVersion: kubeadm.k8s.io/v1beta4";

function problems(text: string): string[] {
  try {
    validateConfigDocuments(decodeConfigDocuments(text, "c.yaml"));
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  return [];
}

describe("unquoted YAML 1.1 scalars in kubeadm string fields", () => {
  it.each([
    [
      "apiServer:\n  extraArgs:\n  - {name: profiling, value: yes}\n",
      'c.yaml: ClusterConfiguration: field "apiServer.extraArgs[0].value" must be a string, but yes is read as the boolean true by Kubernetes\' YAML rules; quote it: "yes"',
    ],
    [
      "apiServer:\n  extraArgs:\n  - name: anonymous-auth\n    value: off\n",
      'c.yaml: ClusterConfiguration: field "apiServer.extraArgs[0].value" must be a string, but off is read as the boolean false by Kubernetes\' YAML rules; quote it: "off"',
    ],
    [
      "controllerManager:\n  extraArgs:\n  - {name: umask, value: 0644}\n",
      'c.yaml: ClusterConfiguration: field "controllerManager.extraArgs[0].value" must be a string, but 0644 is read as the number 420 by Kubernetes\' YAML rules; quote it: "0644"',
    ],
    [
      "clusterName: 1234\n",
      'c.yaml: ClusterConfiguration: field "clusterName" must be a string, but 1234 is read as a number by Kubernetes\' YAML rules; quote it: "1234"',
    ],
    [
      "kubernetesVersion: 1.35\n",
      'c.yaml: ClusterConfiguration: field "kubernetesVersion" must be a string, but 1.35 is read as a number by Kubernetes\' YAML rules; quote it: "1.35"',
    ],
  ])("ClusterConfiguration %j is refused, naming field, value and the fix", (body, want) => {
    expect(problems(`${V4}\nkind: ClusterConfiguration\n${body}`)).toEqual([want]);
  });

  it("refuses them in nodeRegistration.kubeletExtraArgs and in v1beta3 maps", () => {
    expect(
      problems(
        `${V4}\nkind: InitConfiguration\nnodeRegistration:\n  kubeletExtraArgs:\n  - name: fail-swap-on\n    value: on\n`,
      ),
    ).toEqual([
      'c.yaml: InitConfiguration: field "nodeRegistration.kubeletExtraArgs[0].value" must be a string, but on is read as the boolean true by Kubernetes\' YAML rules; quote it: "on"',
    ]);
    expect(
      problems(
        "apiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\napiServer:\n  extraArgs:\n    profiling: y\n",
      ),
    ).toEqual([
      'c.yaml: ClusterConfiguration: field "apiServer.extraArgs.profiling" must be a string, but y is read as the boolean true by Kubernetes\' YAML rules; quote it: "y"',
    ]);
  });

  it("accepts the same values quoted, and keeps them as written", () => {
    const docs = decodeConfigDocuments(
      `${V4}\nkind: ClusterConfiguration\nclusterName: "1234"\napiServer:\n  extraArgs:\n  - {name: profiling, value: "yes"}\n  - {name: umask, value: '0644'}\n`,
      "c.yaml",
    );
    expect(docs.cluster?.clusterName).toBe("1234");
    expect(docs.cluster?.apiServer?.extraArgs).toEqual([
      { name: "profiling", value: "yes" },
      { name: "umask", value: "0644" },
    ]);
  });

  it("still takes unquoted booleans where kubeadm's type is a boolean", () => {
    const docs = decodeConfigDocuments(
      `${V4}\nkind: ClusterConfiguration\nfeatureGates:\n  ControlPlaneKubeletLocalMode: yes\nproxy:\n  disabled: on\n`,
      "c.yaml",
    );
    expect(docs.cluster?.featureGates).toEqual({ ControlPlaneKubeletLocalMode: true });
    expect(docs.cluster?.proxy).toEqual({ disabled: true });
  });
});
