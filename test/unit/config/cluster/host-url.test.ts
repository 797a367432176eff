import { describe, expect, it } from "vitest";
import {
  formatHostURL,
  parseHostURL,
  redactHostURL,
} from "../../../../src/config/cluster/host-url.js";

describe("parseHostURL", () => {
  it.each([
    ["local", { type: "local" }],
    ["docker", { type: "docker" }],
    ["ssh://203.0.113.10", { type: "ssh", host: "203.0.113.10" }],
    [
      "ssh://ubuntu@203.0.113.10:22",
      { type: "ssh", host: "203.0.113.10", port: 22, user: "ubuntu" },
    ],
    ["ssh://ubuntu@203.0.113.11", { type: "ssh", host: "203.0.113.11", user: "ubuntu" }],
    ["ssh://Node-1.Example.COM:2222", { type: "ssh", host: "node-1.example.com", port: 2222 }],
    ["ssh://root@[fd00::1]:22", { type: "ssh", host: "fd00::1", port: 22, user: "root" }],
    // Go and OpenSSH compare IPv6 addresses, not their spellings.
    ["ssh://[FD00:0:0::0001]", { type: "ssh", host: "fd00::1" }],
    ["ssh://bastion.example.com/", { type: "ssh", host: "bastion.example.com" }],
    ["SSH://deploy_user@host", { type: "ssh", host: "host", user: "deploy_user" }],
  ])("%s", (text, expected) => {
    expect(parseHostURL(text)).toEqual(expected);
  });

  it.each([
    ["203.0.113.10", '"local", "docker" or an ssh:// URL'],
    ["Local", '"local", "docker" or an ssh:// URL'],
    ["https://203.0.113.10", "scheme must be ssh://"],
    ["ssh://", "host is missing"],
    ["ssh://user@", "host is missing"],
    ["ssh://fd00::1", "must be in brackets"],
    ["ssh://[203.0.113.10]:22", "only an IPv6 address goes in brackets"],
    ["ssh://[fd00::1]x", "followed by nothing or :port"],
    ["ssh://host:0", "port must be a number from 1 to 65535"],
    ["ssh://host:65536", "port must be a number from 1 to 65535"],
    ["ssh://host:", "port must be a number from 1 to 65535"],
    ["ssh://host:ssh", "port must be a number from 1 to 65535"],
    ["ssh://host/path", "no path"],
    ["ssh://host?x=1", "no path, query"],
    ["ssh://-bad@host", "not a valid login name"],
    ["ssh://host_name", "neither an IP address nor a DNS name"],
    ["ssh://10.0.0.256", "neither an IP address nor a DNS name"],
  ])("refuses %s", (text, problem) => {
    const parsed = parseHostURL(text);
    expect(parsed).toHaveProperty("problem");
    expect((parsed as { problem: string }).problem).toContain(problem);
  });

  it("refuses a password in the URL without repeating it", () => {
    const parsed = parseHostURL("ssh://ubuntu:hunter2@203.0.113.10");
    expect((parsed as { problem: string }).problem).toContain("set ssh.password");
    expect(JSON.stringify(parsed)).not.toContain("hunter2");
    expect(redactHostURL("ssh://ubuntu:hunter2@203.0.113.10:22")).toBe(
      "ssh://ubuntu:***@203.0.113.10:22",
    );
    expect(redactHostURL("ssh://ubuntu@203.0.113.10")).toBe("ssh://ubuntu@203.0.113.10");
    // Written without ssh://, and passwords holding "@", ":" or "/".
    expect(redactHostURL("ubuntu:hunter2@203.0.113.10")).toBe("ubuntu:***@203.0.113.10");
    expect(redactHostURL("ssh://u:p@ss:w/rd@h:22")).toBe("ssh://u:***@h:22");
    expect(redactHostURL("203.0.113.10:22")).toBe("203.0.113.10:22");
  });

  it.each(["local", "ssh://h", "ssh://u@h:2222", "ssh://u@[fd00::1]:22", "ssh://[fd00::1]"])(
    "formats %s back to itself",
    (text) => {
      const parsed = parseHostURL(text);
      if ("problem" in parsed) throw new Error(parsed.problem);
      expect(formatHostURL(parsed)).toBe(text);
    },
  );
});
