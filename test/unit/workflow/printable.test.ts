import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { GitHubReporter } from "../../../src/action/reporter.js";
import { printable } from "../../../src/workflow/printable.js";
import { TerminalReporter } from "../../../src/workflow/reporter.js";
import { runnerCommands } from "../../support/runner-commands.js";

// Text from nodes and servers, printed: never a workflow command the runner acts on
// (test/support/runner-commands.ts parses output as actions/runner does), never a terminal
// escape sequence, and still readable.

const PAYLOADS = [
  "::set-output name=api-server::https://evil.example",
  "  \t::add-mask::Debian",
  "\u00a0\u3000::warning::owned",
  "Debian GNU/Linux 12\r::set-output name=api-server::x",
  "x\r\n::stop-commands::abc",
  "ok ##[warning]planted",
  "ok ##[set-output name=api-server;]x",
  "\u0085::error::after NEL",
  "\u2028::debug::after LS",
  "\u001b[2J\u001b]0;title\u0007cleared",
  "\ufeff::notice::after BOM",
  "ok\n::group::x\n##[add-path]/tmp",
];

describe("printable", () => {
  it.each(PAYLOADS)("makes %j inert for the runner and the terminal", (payload) => {
    const out = printable(payload);
    expect(runnerCommands(out)).toEqual([]);
    // eslint-disable-next-line no-control-regex -- no control character may be left
    expect(out).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029]/);
  });

  it("keeps ordinary text and kubeforge's own lines as they are", () => {
    for (const text of [
      "[preflight] Running pre-flight checks",
      "cp-1: Debian GNU/Linux 12 (bookworm), x64, kernel 6.1.0, cgroup v2",
      "failed on 2 of 5 hosts:\n - w1: connection refused\n - w2: timed out",
      "a: b :: c # ## [x]",
      "tab\tseparated",
    ]) {
      expect(printable(text)).toBe(text);
    }
  });

  it("shows what it escaped", () => {
    expect(printable("Debian\r::set-output name=a::b")).toBe("Debian\\r::set-output name=a::b");
    expect(printable("::warning::x")).toBe("\\x3a:warning::x");
    expect(printable("  ::warning::x")).toBe("  \\x3a:warning::x");
    expect(printable("a ##[warning]b")).toBe("a ##\\x5bwarning]b");
    expect(printable("\u001b[31mred")).toBe("\\x1b[31mred");
    expect(printable("\u202eevil")).toBe("\\u202eevil");
  });

  it("leaves no runner command in random text built from the dangerous pieces", () => {
    const pieces = [":", "::", "##[", "]", "\r", "\n", " ", "\u00a0", "\u0085", "\u2028", "%0A"];
    const words = ["set-output", "add-mask", "warning", "stop-commands", "name=a", "x"];
    const all = [...pieces, ...words];
    for (let i = 0; i < 2000; i++) {
      const bytes = randomBytes(12);
      const text = [...bytes].map((b) => all[b % all.length]).join("");
      const out = printable(text);
      expect(runnerCommands(out), JSON.stringify(text)).toEqual([]);
    }
  });
});

describe("the reporters print node text inert", () => {
  const hostile = "cp-1: Debian\r::set-output name=api-server::evil ##[warning]x";

  it("GitHubReporter: info, warnings and the log file", () => {
    const printed: string[] = [];
    const reporter = new GitHubReporter({
      setSecret: () => {},
      core: {
        info: (m: string) => printed.push(m),
        warning: (m: string | Error) => printed.push(`::warning::${String(m)}`),
        group: (_t: string, fn: () => Promise<unknown>) => fn(),
      } as never,
    });
    reporter.info(hostile);
    reporter.warn(hostile);
    // Only the reporter's own warning command, whose text holds no command of the node's.
    const commands = runnerCommands(printed.join("\n"));
    expect(commands.map((c) => c.command)).toEqual(["warning"]);
    expect(commands[0]!.data).toBe(printable(hostile));
  });

  it("GitHubReporter: a secret with a control character is masked in its inert form too", () => {
    const masks: string[] = [];
    const reporter = new GitHubReporter({ setSecret: (s) => masks.push(s) });
    reporter.mask("pass\u001bword");
    expect(masks).toContain("pass\u001bword");
    expect(masks).toContain("pass\\x1bword");
  });

  it("TerminalReporter: info and warnings", () => {
    const lines: string[] = [];
    const reporter = new TerminalReporter({ write: (l) => lines.push(l) });
    reporter.info(hostile);
    reporter.warn(hostile);
    expect(runnerCommands(lines.join("\n"))).toEqual([]);
    expect(lines[0]).toBe(printable(hostile));
  });
});
