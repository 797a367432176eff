import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { computeDetachedSignature, detachedTokenIsValid } from "../../../src/pki/jws.js";

// Known answers from k8s.io/cluster-bootstrap token/jws/jws_test.go (TestComputeDetachedSignature,
// TestDetachedTokenIsValid): signatures go-jose produced for these inputs.
const content = "Hello from the other side. I must have called a thousand times.";
const secret = "my voice is my passcode";
const id = "joshua";
const signature =
  "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..VShe2taLd-YTrmWuRkcL_8QTNDHYxQIEBsAYYiIj1_8";

describe("computeDetachedSignature (cluster-bootstrap ComputeDetachedSignature)", () => {
  it.each([
    ["content and secret", content, secret, signature],
    [
      "empty content",
      "",
      secret,
      "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..7Ui1ALizW4jXphVUB7xUqC9vLYLL9RZeOFfVLoB7Tgk",
    ],
    [
      "empty secret (go-jose's 32 zero bytes)",
      content,
      "",
      "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..UfkqvDGiIFxrMnFseDj9LYJOLNrvjW8aHhF71mvvAs8",
    ],
  ])("matches cluster-bootstrap's known answer for %s", (_name, c, s, expected) => {
    expect(computeDetachedSignature(c, id, s)).toBe(expected);
  });

  it("has the protected header {alg: HS256, kid: <token id>} and no payload", () => {
    const [header, payload, mac] = computeDetachedSignature(
      "x",
      "abcdef",
      "0123456789abcdef",
    ).split(".");
    expect(JSON.parse(Buffer.from(header!, "base64url").toString())).toEqual({
      alg: "HS256",
      kid: "abcdef",
    });
    expect(payload).toBe("");
    expect(Buffer.from(mac!, "base64url")).toHaveLength(32);
  });

  it("pads a short secret as go-jose does: the MAC equals one keyed with 32 zero-padded bytes", () => {
    const padded = Buffer.alloc(32);
    Buffer.from(secret).copy(padded);
    const header = computeDetachedSignature(content, id, secret).split("..")[0]!;
    const mac = createHmac("sha256", padded)
      .update(`${header}.${Buffer.from(content).toString("base64url")}`)
      .digest("base64url");
    expect(computeDetachedSignature(content, id, secret)).toBe(`${header}..${mac}`);
  });
});

describe("detachedTokenIsValid (cluster-bootstrap DetachedTokenIsValid)", () => {
  it("accepts cluster-bootstrap's known signature", () => {
    expect(detachedTokenIsValid(signature, content, id, secret)).toBe(true);
  });

  it.each([
    ["a suffix (cluster-bootstrap's case)", signature + "foo", content, id, secret],
    ["another content", signature, content + " ", id, secret],
    ["another secret", signature, content, id, "my voice is my passcodE"],
    ["another token id", signature, content, "joshub", secret],
    ["a truncated signature", signature.slice(0, -1), content, id, secret],
    ["an empty signature", "", content, id, secret],
    [
      "the same MAC under another header",
      `${Buffer.from('{"kid":"joshua","alg":"HS256"}').toString("base64url")}..${signature.split("..")[1]}`,
      content,
      id,
      secret,
    ],
    [
      "the payload attached",
      signature.replace("..", `.${Buffer.from(content).toString("base64url")}.`),
      content,
      id,
      secret,
    ],
  ])("refuses %s", (_name, sig, c, i, s) => {
    expect(detachedTokenIsValid(sig, c, i, s)).toBe(false);
  });
});
