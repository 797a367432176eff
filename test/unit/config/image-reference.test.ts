import { describe, expect, it } from "vitest";
import { imageRepositoryProblem, isImageReference } from "../../../src/config/image-reference.js";
import { validateConfigDocuments } from "../../../src/config/validate.js";

// Expected values are the upstream tables, not kubeforge's output.

describe("kubeadm's ValidateImageRepository (validation_test.go TestValidateImageRepository)", () => {
  it.each<[string, boolean]>([
    ["a", true],
    ["a.b.c", true],
    ["a.b.c/repo", true],
    ["a:5000", true],
    ["a.b.c:5000", true],
    ["a.b.c:5000/repo", true],
    ["a/b/c", true],
    ["127.0.0.1:5000/repo", true],
    ["", false],
    ["a.b/c\n\t\t\ts", false],
    [" a.b.c", false],
    ["a.b c", false],
    ["a.b.c:5000/", false],
    ["https://a.b.c:5000", false],
    ["a//b/c", false],
    ["a.b.c:5000/test:1.0", false],
  ])("%j valid: %s", (repository, valid) => {
    expect(imageRepositoryProblem(repository) === undefined).toBe(valid);
  });

  it.each<[string, boolean]>([
    // The registry on a port, and the rest of the grammar around it.
    ["nexus.local:8122", true],
    ["nexus.local:8122/k8s", true],
    ["[fd00::5]:5000", true], // IPv6 host in brackets (DomainRegexp "[fd00:1:2::3]:75050")
    ["[fd00::5]:5000/mirror/k8s", true],
    ["fd00::5:5000", false], // IPv6 without brackets
    ["[fd00::5%eth0]:5000", false], // zone identifiers are excluded
    ["Registry.Example.com/k8s", true], // upper case in the host ("Asdf.com/foo/bar")
    ["registry.example.com/K8s", false], // upper case in a path ("Foo/FarB")
    ["registry.example.com:http/k8s", false], // a port must be numeric ("foo.com:http/bar")
    ["bad_hostname.com:8080", false], // "bad_hostname.com:8080/myapp:tag"
    ["registry.io/foo/project--id.module--name.ver---sion--name", true],
    ["example.com/__underscore", false],
    ["example.com/nodouble..dots", false],
  ])("reference grammar: %j valid: %s", (repository, valid) => {
    expect(imageRepositoryProblem(repository) === undefined).toBe(valid);
  });
});

describe("distribution/reference ReferenceRegexp (regexp_test.go TestReferenceRegexp)", () => {
  const digest = "sha256:be178c0543eb17f5f3043021c9e5fcf30285e557a4fc309cce97ff9ca6182912";
  it.each<[string, boolean]>([
    ["registry.com:8080/myapp:tag", true],
    [`registry.com:8080/myapp@${digest}`, true],
    [`registry.com:8080/myapp:tag2@${digest}`, true],
    ["registry.com:8080/myapp@sha256:badbadbadbad", false],
    ["registry.com:8080/myapp:invalid~tag", false],
    ["bad_hostname.com:8080/myapp:tag", false],
    [`localhost:8080@${digest}`, true],
    [`localhost:8080/name@${digest}`, true],
    [`localhost:http/name@${digest}`, false],
    [`localhost@${digest}`, true],
    ["registry.com:8080/myapp@bad", false],
    ["registry.com:8080/myapp@2bad", false],
  ])("%s matches: %s", (reference, match) => {
    expect(isImageReference(reference)).toBe(match);
  });
});

describe("config validate on image repositories", () => {
  it("accepts a registry with a port in every imageRepository field", () => {
    expect(
      validateConfigDocuments({
        ignoredKinds: [],
        cluster: {
          imageRepository: "nexus.local:8122",
          dns: { imageRepository: "nexus.local:8122/coredns-mirror" },
          etcd: { local: { imageRepository: "[fd00::5]:5000/etcd" } },
        },
      }),
    ).toEqual([]);
  });

  it("names the field of a repository kubeadm refuses", () => {
    const problems = validateConfigDocuments({
      ignoredKinds: [],
      cluster: { imageRepository: "registry.example.com/Mirror" },
    });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(
      /^ClusterConfiguration\.imageRepository: "registry\.example\.com\/Mirror" is not a valid image repository/,
    );
  });
});
