import { describe, expect, it } from "vitest";
import {
  BOOTSTRAP_TOKEN_PATTERN,
  bootstrapTokenMatches,
  generateBootstrapToken,
  parseBootstrapToken,
} from "../../../src/pki/token.js";

describe("bootstrap tokens (cluster-bootstrap token/util)", () => {
  it("generates tokens in kubeadm's format, each different", () => {
    const tokens = new Set(Array.from({ length: 50 }, () => generateBootstrapToken()));
    expect(tokens.size).toBe(50);
    for (const t of tokens) expect(t).toMatch(/^[a-z0-9]{6}\.[a-z0-9]{16}$/);
  });

  it.each([
    ["abcdef.0123456789abcdef", { id: "abcdef", secret: "0123456789abcdef" }],
    ["ABCDEF.0123456789abcdef", undefined],
    ["abcde.0123456789abcdef", undefined],
    ["abcdef.0123456789abcde", undefined],
    ["abcdef:0123456789abcdef", undefined],
    ["abcdef.0123456789abcdef.x", undefined],
  ])("parses %s", (text, expected) => {
    expect(parseBootstrapToken(text)).toEqual(expected);
    expect(BOOTSTRAP_TOKEN_PATTERN.test(text)).toBe(expected !== undefined);
  });

  it("compares a presented token with the expected one", () => {
    const expected = { id: "abcdef", secret: "0123456789abcdef" };
    expect(bootstrapTokenMatches("abcdef.0123456789abcdef", expected)).toBe(true);
    expect(bootstrapTokenMatches("abcdef.0123456789abcdee", expected)).toBe(false);
    expect(bootstrapTokenMatches("abcdeg.0123456789abcdef", expected)).toBe(false);
    expect(bootstrapTokenMatches("not-a-token", expected)).toBe(false);
  });
});
