import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HostUpgradeWork } from "../../../../src/cluster/upgrade/work.js";
import type { InitSystem } from "../../../../src/node/init-system.js";
import { HostDouble, onPath, type CommandStub } from "../../../support/host-double.js";
import { tempRootHost } from "../../../support/init-fixtures.js";

// The kubelet's restart needs the node's init system found and its units reloaded (kubeadm's
// documented daemon-reload) first: started ahead (during the node's drain or kubeadm's command),
// done once, and taken by the kubelet step, whose failure its error is.

let temp: Awaited<ReturnType<typeof tempRootHost>>;
beforeAll(async () => {
  temp = await tempRootHost();
});
afterAll(() => temp.cleanup());

function work(commands: CommandStub[]) {
  const host = new HostDouble(temp.host, {
    commands: [...commands, { match: () => true, result: { code: 0 } }],
  });
  const w = new HostUpgradeWork({
    session: { hostOf: () => host },
  } as unknown as ConstructorParameters<typeof HostUpgradeWork>[0]);
  const initSystemOf = (name: string) =>
    (w as unknown as { initSystemOf(n: string): Promise<InitSystem> }).initSystemOf(name);
  return { host, w, initSystemOf };
}

const commands = (h: HostDouble) => h.calls.map((c) => c.argv.join(" "));

describe("HostUpgradeWork.kubeletRestartAhead", () => {
  it("finds the init system and reloads its units once, for the kubelet step to take", async () => {
    const { host, w, initSystemOf } = work([onPath("systemctl", "/usr/bin/systemctl")]);
    w.kubeletRestartAhead("w-1");
    w.kubeletRestartAhead("w-1");
    const init = await initSystemOf("w-1");
    expect(init.name).toBe("systemd");
    expect(commands(host).filter((c) => c.includes("daemon-reload"))).toEqual([
      "systemctl daemon-reload",
    ]);
    expect(commands(host).filter((c) => c.includes("command -v"))).toHaveLength(1);
    // Nothing is restarted ahead.
    expect(commands(host).some((c) => c.includes("restart"))).toBe(false);
  });

  it("keeps a failure for the step that takes it, unreported until then", async () => {
    const { w, initSystemOf } = work([{ match: ["sh", "-c"], result: { code: 1 } }]);
    w.kubeletRestartAhead("w-1");
    await new Promise((r) => setTimeout(r, 5)); // no unhandled rejection meanwhile
    await expect(initSystemOf("w-1")).rejects.toThrow(
      "no supported init system detected to restart the kubelet",
    );
  });
});
