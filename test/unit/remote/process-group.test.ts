import { spawn, spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import {
  ProcessGroupReport,
  killGroupCommand,
  reportingProcessGroup,
} from "../../../src/remote/ssh/process-group.js";
import { shellJoin } from "../../../src/remote/ssh/quote.js";
import { eventually } from "../../support/processes.js";

const feedAll = (report: ProcessGroupReport, chunks: string[]) =>
  Buffer.concat([...chunks.map((c) => report.feed(Buffer.from(c))), report.rest()]).toString();

describe("ProcessGroupReport", () => {
  it("takes the report line off stderr and keeps the rest, however the chunks fall", () => {
    const whole = "kubeforge-pgid=4242\nwarning: one\nwarning: two\n";
    for (let cut = 0; cut <= whole.length; cut++) {
      const report = new ProcessGroupReport();
      expect(feedAll(report, [whole.slice(0, cut), whole.slice(cut)])).toBe(
        "warning: one\nwarning: two\n",
      );
      expect(report.pgid).toBe(4242);
    }
  });

  it("leaves stderr untouched when its first line is not the report", () => {
    const report = new ProcessGroupReport();
    expect(feedAll(report, ["motd line\n", "kubeforge-pgid=12\n"])).toBe(
      "motd line\nkubeforge-pgid=12\n",
    );
    expect(report.pgid).toBeUndefined();
    for (const line of ["kubeforge-pgid=\n", "kubeforge-pgid=1\n", "kubeforge-pgid=x7\n"]) {
      const r = new ProcessGroupReport();
      expect(feedAll(r, [line])).toBe(line);
      expect(r.pgid).toBeUndefined();
    }
  });

  it("gives back a partial line when the command ends before a newline", () => {
    const report = new ProcessGroupReport();
    expect(feedAll(report, ["kubeforge-pg"])).toBe("kubeforge-pg");
    expect(report.pgid).toBeUndefined();
  });
});

describe("process group commands", () => {
  it.each(["dash", "bash"])(
    "the reporting command, as %s runs it, names the group of the command it execs",
    (shell) => {
      // setsid makes the shell a group leader, as sshd makes each session's shell.
      const command = shellJoin(["sh", "-c", 'echo $$; echo "it\'s" >&2', "sh"]);
      const r = spawnSync("setsid", [shell, "-c", reportingProcessGroup(command)], {
        encoding: "utf8",
      });
      const report = new ProcessGroupReport();
      expect(report.feed(Buffer.from(r.stderr)).toString()).toBe("it's\n");
      expect(report.pgid).toBe(Number(r.stdout.trim()));
    },
  );

  it("the kill command ends every process of the group", async () => {
    const leader = spawn("setsid", ["sh", "-c", "sleep 60 & sleep 60 & wait"], {
      stdio: "ignore",
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const pgid = leader.pid!;
    const members = () =>
      spawnSync("pgrep", ["-g", String(pgid)], { encoding: "utf8" })
        .stdout.trim()
        .split(/\s+/);
    expect(members().length).toBe(3);
    // As the login shell runs it: bash here, and it names sh itself.
    const r = spawnSync("bash", ["-c", killGroupCommand(pgid, "TERM")], { encoding: "utf8" });
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    await new Promise((resolve) => leader.once("exit", resolve));
    expect(await eventually(() => members()[0] === "", 2000)).toBe(true);
  });
});
