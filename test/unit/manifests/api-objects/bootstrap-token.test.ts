import { describe, expect, it } from "vitest";
import type { BootstrapToken } from "../../../../src/config/types.js";
import {
  CERTS_PROXY_TOKEN_DESCRIPTION,
  bootstrapTokenFromSecret,
  bootstrapTokenSecret,
  bootstrapTokenSecretData,
  certsProxyToken,
} from "../../../../src/manifests/bootstrap-token.js";
import { baseInitConfig } from "../../../support/init-fixtures.js";
import { expectValidObject } from "./valid.js";

// Known answers from kubeadm's apis/bootstraptoken/v1/utils_test.go (TestEncodeTokenSecretData,
// TestBootstrapTokenToSecret, TestBootstrapTokenToSecretRoundtrip): refTime is
// 1970-01-01T01:01:01Z and the token abcdef.abcdef0123456789.

const refTime = new Date(Date.UTC(1970, 0, 1, 1, 1, 1));
const TOKEN = "abcdef.abcdef0123456789";
const base = { "token-id": "abcdef", "token-secret": "abcdef0123456789" };

describe("bootstrapTokenSecretData (kubeadm's encodeTokenSecretData cases)", () => {
  const cases: [string, BootstrapToken, Record<string, string>][] = [
    ["the minimum amount of information needed to be specified", { token: TOKEN }, base],
    ["adds description", { token: TOKEN, description: "foo" }, { ...base, description: "foo" }],
    ["adds ttl", { token: TOKEN, ttl: "2h" }, { ...base, expiration: "1970-01-01T03:01:01Z" }],
    [
      "adds expiration",
      { token: TOKEN, expires: "1970-01-01T01:01:01Z" },
      { ...base, expiration: "1970-01-01T01:01:01Z" },
    ],
    [
      "adds ttl and expiration, should favor expiration",
      { token: TOKEN, ttl: "2h", expires: "1970-01-01T01:01:01Z" },
      { ...base, expiration: "1970-01-01T01:01:01Z" },
    ],
    [
      "adds usages",
      { token: TOKEN, usages: ["authentication", "signing"] },
      { ...base, "usage-bootstrap-signing": "true", "usage-bootstrap-authentication": "true" },
    ],
    [
      "adds groups",
      { token: TOKEN, groups: ["system:bootstrappers", "system:bootstrappers:foo"] },
      { ...base, "auth-extra-groups": "system:bootstrappers,system:bootstrappers:foo" },
    ],
    [
      "all together",
      {
        token: TOKEN,
        description: "foo",
        ttl: "2h",
        expires: "1970-01-01T01:01:01Z",
        usages: ["authentication", "signing"],
        groups: ["system:bootstrappers", "system:bootstrappers:foo"],
      },
      {
        ...base,
        description: "foo",
        expiration: "1970-01-01T01:01:01Z",
        "usage-bootstrap-signing": "true",
        "usage-bootstrap-authentication": "true",
        "auth-extra-groups": "system:bootstrappers,system:bootstrappers:foo",
      },
    ],
  ];
  it.each(cases)("%s", (_name, token, want) => {
    expect(bootstrapTokenSecretData(token, refTime)).toEqual(want);
  });

  const expirations: [string, BootstrapToken, string | undefined][] = [
    ["a TTL of 0 means no expiration", { token: TOKEN, ttl: "0" }, undefined],
    ["a TTL of 0s means no expiration", { token: TOKEN, ttl: "0s" }, undefined],
    ["a negative TTL means no expiration", { token: TOKEN, ttl: "-1h" }, undefined],
    // Go's Format(RFC3339) truncates the fraction of a second.
    ["24h from a time with milliseconds", { token: TOKEN, ttl: "24h0m0s" }, "1970-01-02T01:01:01Z"],
    [
      "the milliseconds of now and of the TTL add up",
      { token: TOKEN, ttl: "1.5s" },
      "1970-01-01T01:01:03Z",
    ],
    [
      "an offset expiry is printed in UTC",
      { token: TOKEN, expires: "2030-01-01T02:00:00+02:00" },
      "2030-01-01T00:00:00Z",
    ],
    [
      "a fractional expiry is truncated",
      { token: TOKEN, expires: "2030-01-01T00:00:00.999999999Z" },
      "2030-01-01T00:00:00Z",
    ],
  ];
  it.each(expirations)("%s", (_name, token, want) => {
    const now = new Date(refTime.getTime() + 999);
    expect(bootstrapTokenSecretData(token, now)["expiration"]).toBe(want);
  });

  it.each([
    [
      "token",
      { token: "abcdef.ABCDEF0123456789" },
      /bootstrapTokens\[0\]\.token: the bootstrap token is not of the form/,
    ],
    [
      "ttl",
      { token: TOKEN, ttl: "2 hours" },
      /bootstrapTokens\[0\]\.ttl: "2 hours" is not a valid duration/,
    ],
    [
      "expires",
      { token: TOKEN, expires: "tomorrow" },
      /bootstrapTokens\[0\]\.expires: "tomorrow" is not an RFC 3339 time/,
    ],
  ])("names the field at fault: %s", (_f, token, message) => {
    const run = () =>
      bootstrapTokenSecretData(token, refTime, "InitConfiguration.bootstrapTokens[0]");
    expect(run).toThrow(message);
  });

  it("never repeats the token secret in an error", () => {
    const run = () => bootstrapTokenSecretData({ token: "abcdef.SECRETSECRETSECR" }, refTime);
    expect(run).toThrow();
    expect(() => run()).not.toThrow(/SECRET/);
  });
});

describe("bootstrapTokenSecret", () => {
  it("is kubeadm's Secret for the all-together token (TestBootstrapTokenToSecret)", () => {
    const secret = bootstrapTokenSecret(
      {
        token: TOKEN,
        description: "foo",
        expires: "1970-01-01T01:01:01Z",
        usages: ["signing", "authentication"],
        groups: ["system:bootstrappers", "system:bootstrappers:foo"],
      },
      new Date(),
    );
    expect(secret.apiVersion).toBe("v1");
    expect(secret.kind).toBe("Secret");
    expect(secret.metadata).toEqual({ name: "bootstrap-token-abcdef", namespace: "kube-system" });
    expect(secret["type"]).toBe("bootstrap.kubernetes.io/token");
    const decoded = Object.fromEntries(
      Object.entries(secret["data"] as Record<string, string>).map(([k, v]) => [
        k,
        Buffer.from(v, "base64").toString(),
      ]),
    );
    expect(decoded).toEqual({
      "token-id": "abcdef",
      "token-secret": "abcdef0123456789",
      description: "foo",
      expiration: "1970-01-01T01:01:01Z",
      "usage-bootstrap-signing": "true",
      "usage-bootstrap-authentication": "true",
      "auth-extra-groups": "system:bootstrappers,system:bootstrappers:foo",
    });
  });

  it("round-trips through bootstrapTokenFromSecret (TestBootstrapTokenToSecretRoundtrip)", () => {
    const token: BootstrapToken = {
      token: TOKEN,
      description: "foo",
      expires: "1970-01-01T01:01:01Z",
      usages: ["authentication", "signing"],
      groups: ["system:bootstrappers", "system:bootstrappers:foo"],
    };
    expect(bootstrapTokenFromSecret(bootstrapTokenSecret(token, refTime))).toEqual(token);
  });

  it("refuses a Secret whose name does not match its token id", () => {
    const secret = bootstrapTokenSecret({ token: TOKEN }, refTime);
    secret.metadata.name = "bootstrap-token-zzzzzz";
    expect(() => bootstrapTokenFromSecret(secret)).toThrow(
      /Actual: "bootstrap-token-zzzzzz". Expected: "bootstrap-token-abcdef"/,
    );
  });

  it("gives init's default token kubeadm's usages, group and 24h expiry", async () => {
    const cfg = baseInitConfig({}, (c) => {
      c.init.bootstrapTokens[0]!.token = "abcdef.0123456789abcdef";
    });
    const now = new Date("2026-03-04T05:06:07.890Z");
    const secret = bootstrapTokenSecret(cfg.init.bootstrapTokens[0]!, now);
    expect(bootstrapTokenFromSecret(secret)).toEqual({
      token: "abcdef.0123456789abcdef",
      expires: "2026-03-05T05:06:07Z",
      usages: ["authentication", "signing"],
      groups: ["system:bootstrappers:kubeadm:default-node-token"],
    });
    await expectValidObject(secret);
  });

  it("makes the upload-certs proxy token: 2h, a description, no usages, no groups", async () => {
    const now = new Date("2026-03-04T05:06:07Z");
    const secret = bootstrapTokenSecret(certsProxyToken("zyxwvu.0123456789abcdef"), now);
    const data = secret["data"] as Record<string, string>;
    expect(Object.keys(data).sort()).toEqual([
      "description",
      "expiration",
      "token-id",
      "token-secret",
    ]);
    expect(Buffer.from(data["description"]!, "base64").toString()).toBe(
      CERTS_PROXY_TOKEN_DESCRIPTION,
    );
    expect(CERTS_PROXY_TOKEN_DESCRIPTION).toBe(
      "Proxy for managing TTL for the kubeadm-certs secret",
    );
    expect(Buffer.from(data["expiration"]!, "base64").toString()).toBe("2026-03-04T07:06:07Z");
    expect(secret.metadata.name).toBe("bootstrap-token-zyxwvu");
    await expectValidObject(secret);
  });
});
