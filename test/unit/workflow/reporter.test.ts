import { describe, expect, it } from "vitest";
import { TerminalReporter } from "../../../src/workflow/reporter.js";

function capture(prefix?: string) {
  const lines: string[] = [];
  const reporter = new TerminalReporter({
    write: (l) => lines.push(l),
    ...(prefix ? { prefix } : {}),
  });
  return { lines, reporter };
}

describe("TerminalReporter", () => {
  it.each([
    ["[certs] disk almost full", "[certs] WARNING: disk almost full"],
    ["[preflight] [WARNING Swap]: swap is on", "[preflight] [WARNING Swap]: swap is on"],
    ["[preflight] WARNING: no CRI", "[preflight] WARNING: no CRI"],
    ["no phase tag", "WARNING: no phase tag"],
  ])("marks warnings once: %s", (input, expected) => {
    const { lines, reporter } = capture();
    reporter.warn(input);
    expect(lines).toEqual([expected]);
  });

  it("replaces every line of a masked multi-line secret, in info and warn output", () => {
    const { lines, reporter } = capture("cp-1");
    const key =
      "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBx4\nAoGCCqGSM49\n-----END EC PRIVATE KEY-----";
    reporter.mask(key);
    reporter.mask("abcdef.0123456789abcdef");
    reporter.info(`[kubeconfig] key is ${key}`);
    reporter.warn(`[bootstrap-token] token abcdef.0123456789abcdef leaked?`);
    expect(lines.join("\n")).not.toMatch(/MHcCAQEEIBx4|AoGCCqGSM49|0123456789abcdef/);
    expect(lines[0]).toMatch(/^cp-1: \[kubeconfig\] key is \*\*\*/);
    expect(lines[1]).toBe("cp-1: [bootstrap-token] WARNING: token *** leaked?");
  });
});
