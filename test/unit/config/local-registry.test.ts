import { load } from "js-yaml";
import { describe, expect, it } from "vitest";
import {
  REGISTRY_IMAGE,
  registryConfig,
  registryContainerBody,
  registryContainerName,
  registryHost,
} from "../../../src/config/local-registry.js";

// The local registry as data: the distribution registry's config.yml (docs/configuration.md of
// distribution v2: version 0.1, storage.filesystem.rootdirectory, http.addr) and the container
// kind's "Local Registry" recipe runs: `docker run -d --restart=always -p
// "127.0.0.1:${reg_port}:5000" --network bridge --name kind-registry registry:2`.

describe("registryConfig", () => {
  it("is the distribution registry's configuration: filesystem storage, plain HTTP on addr", () => {
    const config = load(registryConfig({ rootDirectory: "/tmp/r/data", addr: ":5001" }));
    expect(config).toEqual({
      version: 0.1,
      log: { level: "warn", fields: { service: "registry" } },
      storage: { filesystem: { rootdirectory: "/tmp/r/data" }, delete: { enabled: true } },
      http: { addr: ":5001", headers: { "X-Content-Type-Options": ["nosniff"] } },
    });
  });
});

describe("registryContainerBody", () => {
  it("is kind's registry:2 container, published on the runner, labelled with the cluster", () => {
    const body = registryContainerBody({ cluster: "ci", port: 5001, hostIp: "127.0.0.1" });
    expect(body).toEqual({
      Image: "docker.io/library/registry:2",
      Labels: { "dev.kubeforge.cluster": "ci", "dev.kubeforge.node": "_registry" },
      ExposedPorts: { "5000/tcp": {} },
      HostConfig: {
        PortBindings: { "5000/tcp": [{ HostIp: "127.0.0.1", HostPort: "5001" }] },
        RestartPolicy: { Name: "always" },
      },
    });
    expect(REGISTRY_IMAGE).toBe("docker.io/library/registry:2");
  });

  it("joins the cluster's network under the alias the nodes' hosts.toml names", () => {
    const body = registryContainerBody({
      cluster: "ci",
      port: 5002,
      hostIp: "0.0.0.0",
      network: "kubeforge-ci",
    });
    expect(body.HostConfig).toMatchObject({ NetworkMode: "kubeforge-ci" });
    expect(body.NetworkingConfig).toEqual({
      EndpointsConfig: { "kubeforge-ci": { Aliases: ["kubeforge-registry"] } },
    });
  });

  it("names: localhost:<port> for images, a container name no node's can take", () => {
    expect(registryHost(5001)).toBe("localhost:5001");
    // Node containers are kubeforge-<cluster>-<node>, node names DNS labels (no "_").
    expect(registryContainerName("ci")).toBe("kubeforge-ci_registry");
  });
});
